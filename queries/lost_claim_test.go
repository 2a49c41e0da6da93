package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// LostClaim finds only what a claim of this attempt of the invocation left unheard: its open jobs
// past the attempt's start (AfterJob), not held (Known), whose server still carries their lease.
// Never an earlier attempt's open job (its result may wait in a spool: checked again, it would be
// checked twice), another invocation's, a finished one, or one whose server moved on.
func TestALostClaimIsOnlyThisAttemptsOwnUnheardJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	round := testfactory.Round(ctx, t, pool, nil)
	at := time.Now().UTC().Truncate(time.Microsecond)
	lease := at.Add(queries.InFlightWindow)
	job := func(inv int, leased bool, finished bool) int64 {
		next := lease
		if !leased {
			next = at.Add(time.Hour)
		}
		srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &next})
		o := &testfactory.JobOpts{ServerID: srv, RoundID: &round, Invocation: &inv, RequestedAt: &at}
		if finished {
			o.FinishedAt, o.Outcome = &at, "ok"
		}
		return testfactory.Job(ctx, t, pool, o)
	}
	earlier := job(0, true, false) // an earlier attempt's, open: its result may be spooled
	claims, err := queries.InvocationClaimed(ctx, pool, round, 0)
	require.NoError(t, err)
	after := claims.LastJob
	require.Equal(t, earlier, after)

	held := job(0, true, false)  // this attempt holds it
	lost := job(0, true, false)  // claimed, its answer lost
	job(1, true, false)          // another invocation's
	job(0, true, true)           // finished
	job(0, false, false)         // its server moved on (re-checked, rescued, advanced)
	lost2 := job(0, true, false) // the lost claim's second job
	got, err := queries.LostClaim(ctx, pool, queries.LostClaimParams{RoundID: round, Invocation: 0, AfterJob: after,
		Known: []int64{held}, Since: time.Minute, Limit: 10})
	require.NoError(t, err)
	var ids []int64
	for _, j := range got {
		ids = append(ids, j.JobID)
		require.Equal(t, lease, j.ClaimedNextCheckAt.UTC(), "the lease the finish compares against")
		require.Equal(t, at, j.RequestedAt.UTC())
	}
	require.Equal(t, []int64{lost, lost2}, ids)

	// At most what the claim asked for, and only jobs requested since it was sent: an older one
	// is an earlier claim's.
	got, err = queries.LostClaim(ctx, pool, queries.LostClaimParams{RoundID: round, Invocation: 0, AfterJob: after,
		Known: []int64{held}, Since: time.Minute, Limit: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, lost, got[0].JobID)
	old := at.Add(-10 * time.Minute)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(old.Add(queries.InFlightWindow))})
	inv := 0
	older := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round, Invocation: &inv, RequestedAt: &old})
	got, err = queries.LostClaim(ctx, pool, queries.LostClaimParams{RoundID: round, Invocation: 0, AfterJob: after,
		Known: []int64{held, lost, lost2}, Since: time.Minute, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, got, "job %d was requested before the claim was sent", older)
}
