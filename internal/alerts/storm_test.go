package alerts_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// endRound ends a round as a round does (queries.FinishRound).
func endRound(ctx context.Context, t *testing.T, pool *pgxpool.Pool, round int64) {
	t.Helper()
	_, err := queries.FinishRound(ctx, pool, round, nil)
	require.NoError(t, err)
}

// The storm guard: when 80 % of a round's checks fail at once, the prober is the likelier culprit.
// The failures are finished first, the worst order: all eight are recorded before the round has
// storm_min (10) checks and are counted, the round is judged degraded when it ends, and each
// server's next run takes its failure back.
// Two such rounds in a row give one prober.degraded each and not one server.down.
func TestARoundWhereEightyPerCentFailIsDegradedAndTakesNoServerDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	servers := make([]int64, 10)
	for i := range servers {
		servers[i] = testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slugOf(i)})
	}
	healthy := testfactory.Round(ctx, t, pool, nil)
	for _, s := range servers {
		finish(ctx, t, pool, healthy, s, "ok", nil)
	}
	for range 2 {
		storm := testfactory.Round(ctx, t, pool, nil)
		for i, s := range servers {
			outcome := "error"
			if i >= 8 {
				outcome = "ok"
			}
			finish(ctx, t, pool, storm, s, outcome, nil)
		}
		endRound(ctx, t, pool, storm)
	}
	ev := events(ctx, t, pool)
	require.Len(t, ev, 2, "%+v", ev)
	for _, e := range ev {
		require.Equal(t, "prober.degraded", e.Type)
	}
	for i := range 8 {
		st := state(ctx, t, pool, slugOf(i))
		require.Equal(t, "up", st.State)
	}

	// The next healthy round resumes counting: two real failures in a row take a server down.
	for range 2 {
		round := testfactory.Round(ctx, t, pool, nil)
		for i, s := range servers {
			outcome := "ok"
			if i == 0 {
				outcome = "failed"
			}
			finish(ctx, t, pool, round, s, outcome, nil)
		}
		endRound(ctx, t, pool, round)
	}
	ev = events(ctx, t, pool)
	require.Len(t, ev, 3)
	require.Equal(t, "server.down", ev[2].Type)
	require.Equal(t, slugOf(0), ev[2].Server)
}

// A round below storm_min checks is never degraded, however many of them fail.
func TestASmallRoundIsNeverDegraded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "alone"})
	for range 2 {
		round := testfactory.Round(ctx, t, pool, nil)
		finish(ctx, t, pool, round, srv, "failed", nil)
	}
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "server.down", ev[0].Type)
}

// Failures that come once the round has storm_min checks judge it at once, before it ends.
func TestARoundIsJudgedDegradedByTheFailureThatTipsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	servers := make([]int64, 12)
	for i := range servers {
		servers[i] = testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slugOf(i)})
	}
	round := testfactory.Round(ctx, t, pool, nil)
	for i, s := range servers {
		outcome := "failed"
		if i < 4 {
			outcome = "ok"
		}
		finish(ctx, t, pool, round, s, outcome, nil)
	}
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "prober.degraded", ev[0].Type)
	var checked, failed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT checked, failed FROM alert_degraded_rounds WHERE round_id = $1`, round).
		Scan(&checked, &failed))
	require.Equal(t, []int{10, 6}, []int{checked, failed}, "judged at the 10th check: 6 of 10 failed")
}
