// Package demo is `probectl demo`: the whole story on one machine, with nothing installed but
// PostgreSQL's server binaries. It starts a throwaway PostgreSQL (internal/pglaunch), migrates it,
// starts a simulated fleet on loopback (Fleet), signs with a throwaway key and then runs one of two
// scenarios through the same domain functions as the real commands (release.Record,
// release.SettingsForRound and probe.Round, release.Verify, audit.Duplicates,
// release.PlanRollback and release.Rollback):
//
//   - the default: a release with fan-out 19, claim limit 5 and concurrency 3, parallel rounds
//     until nothing is due, deploy verify and the duplicate audit on what they did (pass, no
//     duplicates), and what `rollback --fanout-off` would change;
//   - the incident replay: the old order of a finish's two writes (probe/incident, which only
//     this package of the binary imports) with the spacing guard off, first as the sequential
//     prober ran it (clean), then with fan-out (duplicate claims), deploy verify catching them,
//     `rollback --fanout-off` applied, clean rounds after it, and the audit split at the deploy
//     and at the rollback.
//
// What each step shows goes to a Reporter, which the command renders with the real commands'
// renderers; the package itself prints nothing.
package demo
