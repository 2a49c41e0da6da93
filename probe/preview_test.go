package probe

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestADryRunNamesTheServersTheRoundThenClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	ago := func(d time.Duration) *time.Time { return testfactory.Ptr(time.Now().Add(-d)) }
	for i := range 8 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Duration(10-i) * time.Hour)})
	}
	open := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(20 * time.Hour)})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: open, RequestedAt: ago(time.Minute)})
	spaced := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(20 * time.Hour)})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: spaced, RequestedAt: ago(time.Minute), FinishedAt: ago(time.Minute)})
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(20 * time.Hour), Status: "paused"})

	s := testSettings(FinishTx)
	s.Fanout, s.ClaimLimit = 1, 3 // capacity 6 of 8 claimable
	plan, err := Preview(ctx, pool, s, nil)
	require.NoError(t, err)
	require.Equal(t, 8, plan.Claimable)
	require.Equal(t, 6, plan.WouldClaim)
	require.Equal(t, map[string]int{"open_job": 1, "spacing": 1, "paused": 1}, plan.Skipped)
	var planned []int64
	for _, ps := range plan.Servers {
		if ps.WouldClaim {
			planned = append(planned, ps.ServerID)
		}
	}

	sum, err := (&Round{DB: pool, Settings: s, Checker: &okChecker{}}).Run(ctx)
	require.NoError(t, err)
	jobs, err := queries.ListRoundJobs(ctx, pool, sum.RoundID)
	require.NoError(t, err)
	var claimed []int64
	for _, j := range jobs {
		claimed = append(claimed, j.ServerID)
	}
	slices.Sort(planned)
	slices.Sort(claimed)
	require.Equal(t, planned, claimed)
}

func TestADryRunReadsTheDatabasesClockOnceForTheWholePlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	// In one transaction the database's now() stands still, so the plan must carry exactly it.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	dbNow, err := queries.StatusNow(ctx, tx, nil)
	require.NoError(t, err)

	plan, err := Preview(ctx, tx, testSettings(FinishTx), nil)
	require.NoError(t, err)
	require.Equal(t, dbNow.UTC(), plan.Now)
	require.Equal(t, 1, plan.WouldClaim)
}

// The dry run counts the servers a claim leased: not due, in flight until their lease's end.
func TestADryRunCountsTheServersInFlightUnderALease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	dueServers(t, pool, 3)
	round := testfactory.Round(ctx, t, pool, nil)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 2})
	require.NoError(t, err)
	require.Len(t, jobs, 2)

	plan, err := Preview(ctx, pool, testSettings(FinishTx), nil)
	require.NoError(t, err)
	require.Equal(t, 1, plan.Claimable, "the leased servers are not due")
	require.Equal(t, 2, plan.NotDue)
	require.Equal(t, 2, plan.Leased)
}
