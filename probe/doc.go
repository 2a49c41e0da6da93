// Package probe runs rounds: it claims the servers that are due, checks them concurrently and
// records a (signed) run for each, without ever checking a server twice.
//
// A round is one cron invocation plus Settings.Fanout fan-out invocations, all goroutines of this
// process. Each invocation has its own loop: whenever it has a free slot (at most
// Settings.Concurrency checks at once) it claims up to min(free slots, ClaimLimit − already
// claimed) due servers through probe_claim_lease, until a claim comes back empty or the round's time
// budget is spent; then it finishes what it holds. Several rounds, in this process or others, may
// run at once: the database is the only coordinator.
//
// Everything here is built against one sentence: at no moment is a server both due and without an
// open job. Claim (layer 1, the lock), finish (layer 2, the order of the writes), the spacing
// guard (layer 3) and the unique index (layer 4) each hold it on their own; see docs/invariant.md
// and queries/migrations/00002_claim.sql.
//
// The finish has two modes. FinishTx (default) advances next_check_at, stores the run and closes
// the job in one transaction (probe_finish). FinishAdvanceFirst makes two writes in the safe order:
// advance first, so that the job is still open while the server is due, then the run and the job.
// The unsafe order (job first, then advance) is not in this package: it lives in probe/incident,
// which a round takes through Round.WriteOrder (nil, the default, is the safe order). probe's
// tests use it to show that the order tests can fail, and `probectl demo --reproduce-incident` to
// replay the incident; no flag of `run round` and no release setting can select it, and a test
// over `go list -deps` fails if any package of the binary but internal/demo imports it.
//
// A round whose context is cancelled (Ctrl-C, SIGTERM) claims no more, but every claim already
// sent is waited for and every job claimed is finished: a check stopped midway is stored as a run
// with outcome error and an error that says probectl interrupted it, not that the server failed.
// Such a finish advances next_check_at like any other (requests may have been sent; the server
// is checked again at its next interval, or sooner through `servers recheck`). Run then returns
// an *InterruptedError (exit 3) and the summary says Interrupted.
package probe
