package probe

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// A WriteOrder that never stores the run must not pass for a finished job: the finish fails and
// says why, so the job is not counted as done.
func TestAWriteOrderThatSkipsTheFinishFailsTheFinish(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	s := testSettings(FinishAdvanceFirst)
	s.ClaimLimit = 1
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{},
		WriteOrder: func(_ context.Context, _ queries.ClaimedJob, advance func(), _ func() error, _ func()) { advance() }}
	sum, err := r.Run(t.Context())
	require.ErrorContains(t, err, "the write order did not finish the job")
	require.Zero(t, sum.Runs)
}
