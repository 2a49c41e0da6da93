package probe

import (
	"context"

	"github.com/probectl/probectl/queries"
)

// ReplayIncident puts the incident's order of writes back into r, for `probectl demo
// --reproduce-incident` only: an advance-first finish marks the job finished first and moves the
// next check time second, with gap (if not nil) called between the two writes, where the
// incident's network round trip was. Between them the server is due and has no open job, and
// another invocation's claim takes it again.
//
// It affects advance-first rounds (Settings.Finish) only, the two-write mode the incident ran.
// No flag of `run round` and no release setting reaches it: the replay runs it on its own
// throwaway database, to show that deploy verify and the duplicate audit catch what it does.
func ReplayIncident(r *Round, gap func(ctx context.Context, job queries.ClaimedJob)) {
	r.writeOrder = func(ctx context.Context, job queries.ClaimedJob, advance func() (bool, error),
		finishJob func() (queries.FinishResult, error), between func()) (queries.FinishResult, error) {
		fr, err := finishJob()
		if err != nil {
			return fr, err
		}
		between()
		if gap != nil {
			gap(ctx, job)
		}
		advanced, err := advance()
		fr.Advanced = advanced
		if err != nil {
			// Reported by advance, which also stopped the round's claims.
			return fr, errAdvanceFailed
		}
		return fr, nil
	}
}
