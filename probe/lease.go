package probe

import (
	"fmt"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// leaseMargin is how long before the database's lease the prober's own copy ends.
const leaseMargin = settings.LeaseMargin

// lease is the prober's own copy of a job's lease (its claim time plus the in-flight window). It
// starts just before the claim is sent, so it ends before the database's, which dates the job
// later; it ends on whichever clock ends it first, the monotonic one (immune to the wall clock
// being set) or the wall clock (which keeps running while a machine is suspended, when Go's
// monotonic clock stops), less leaseMargin. After it ends the prober sends no request: another
// round may have taken the job for abandoned and claimed the server again.
type lease struct {
	mono time.Time // with the monotonic reading of the start, when it has one
	wall time.Time // the same end on the wall clock only
}

// newLease starts a lease at start (read just before the claim is sent).
func newLease(start time.Time) lease {
	d := queries.InFlightWindow - leaseMargin
	return lease{mono: start.Add(d), wall: start.Round(0).Add(d)}
}

// ended returns a *LeaseError when the lease has ended at now, nil while it holds.
func (l lease) ended(now time.Time) error {
	if !now.Before(l.mono) || !now.Round(0).Before(l.wall) {
		return &LeaseError{End: l.wall}
	}
	return nil
}

// LeaseError says the prober's copy of a job's lease ended: the request was not sent, or the
// check was stopped, by probectl, not failed by the server.
type LeaseError struct{ End time.Time }

func (e *LeaseError) Error() string {
	return fmt.Sprintf("the job's lease ended at %s (in-flight window %s less %s): no request is sent after it",
		e.End.UTC().Format(time.RFC3339), render.Duration(queries.InFlightWindow), render.Duration(leaseMargin))
}

// fencedSummary is a fenced result's summary: what tells a lease's end from the other results that
// are probectl's fault.
const fencedSummary = "fenced"

// fenced marks a result as stopped by the lease, keeping what it observed: the server is not to
// blame, and a late finish stores it as such.
func fenced(res check.Result, err error) check.Result {
	msg := fmt.Sprintf("check fenced by probectl (%v), not failed by the server", err)
	if res.Error != "" {
		msg += ": " + res.Error
	}
	res.Outcome = check.OutcomeError
	res.Summary = fencedSummary
	res.Error = msg
	res.Fault = check.FaultProbectl
	return res
}
