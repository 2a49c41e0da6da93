// Package incident holds the order of writes that caused the 2026-10-07 incident, for `probectl
// demo --reproduce-incident` and for probe's tests, which put it back to show that the order and
// interleaving tests can fail.
//
// The shipped probe package has only the safe order; this one is kept out of it on purpose. Among
// the packages linked into the binary, only internal/demo may import it: a test over `go list
// -deps` (internal/demo's TestOnlyTheDemoImportsTheIncidentsOrder) fails when any other package
// does. It imports nothing of probe, so that probe's own tests can use it.
package incident

import (
	"context"

	"github.com/probectl/probectl/queries"
)

// Order returns the incident's order for the two writes of an advance-first finish, to set as
// probe.Round.WriteOrder: mark the job finished first and move the next check time second, with
// gap (if not nil) called between the two, where the incident's network round trip was. Between
// them the server is due and has no open job, and another invocation's claim takes it again.
// It affects advance-first rounds (Settings.Finish) only, the two-write mode the incident ran.
func Order(gap func(ctx context.Context, job queries.ClaimedJob)) func(ctx context.Context,
	job queries.ClaimedJob, advance func(), finishJob func() error, between func()) {
	return func(ctx context.Context, job queries.ClaimedJob, advance func(), finishJob func() error, between func()) {
		if err := finishJob(); err != nil {
			return
		}
		between()
		if gap != nil {
			gap(ctx, job)
		}
		advance()
	}
}
