package probe

import (
	"context"

	"github.com/probectl/probectl/queries"
)

// WriteOrder makes the two writes of an advance-first finish (Settings.Finish is
// FinishAdvanceFirst): it calls advance (move the server's next check time) and finishJob (store
// the run and close the job), each once, and between, the test hook, between the two. It calls
// nothing after finishJob fails. A round that is given none (Round.WriteOrder nil) uses the safe
// order, advance first, and that is all the shipped commands use: no flag of `run round` and no
// release setting sets a WriteOrder.
//
// It is an extension point rather than a setting so that the incident's order (job first, advance
// second) can live outside this package, in probe/incident, for `probectl demo
// --reproduce-incident` and for the tests that show the order tests can fail; a test over `go list
// -deps` keeps every other package of the binary from importing it.
type WriteOrder func(ctx context.Context, job queries.ClaimedJob, advance func(), finishJob func() error, between func())

// safeOrder advances while the job is still open, then stores the run and closes the job: at no
// moment is the server both due and without an open job.
func safeOrder(_ context.Context, _ queries.ClaimedJob, advance func(), finishJob func() error, between func()) {
	advance()
	between()
	_ = finishJob() // the caller reads its error
}
