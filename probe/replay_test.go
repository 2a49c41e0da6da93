package probe

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/incident"
	"github.com/probectl/probectl/queries"
)

// The replay must really be the incident's order, or the demo would show nothing: the order test
// and the interleaving test, which pass on the code as it is, fail under it.

func TestTheIncidentReplayFinishesTheJobBeforeItAdvances(t *testing.T) {
	t.Parallel()
	calls := finishCalls(t, incident.Order(nil))
	require.Equal(t, []string{"Claim", "FinishJob", "AdvanceServer"}, calls)
	require.Error(t, advanceComesFirst(calls))
}

func TestUnderTheIncidentReplayAClaimInTheGapTakesTheServerAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	_, err := incident.UnleasedClaim(ctx, pool)
	require.NoError(t, err)
	dueServers(t, pool, 1)
	s := testSettings(FinishAdvanceFirst)
	s.MinSpacing, s.ClaimLimit = 0, 1
	other := testfactory.Round(ctx, t, pool, nil)
	var got []queries.ClaimedJob
	var claimErr error
	// The gap hook is where the replay widens the gap; here a second round claims in it.
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{},
		WriteOrder: incident.Order(func(ctx context.Context, job queries.ClaimedJob) {
			got, claimErr = queries.Claim(ctx, pool, queries.ClaimParams{RoundID: other, Limit: 10})
		})}
	sum, err := r.Run(ctx)
	require.NoError(t, err)
	require.NoError(t, claimErr)
	require.Len(t, got, 1, "with the job finished first, the server is due and has no open job")
	require.Equal(t, 1, sum.Jobs)
}
