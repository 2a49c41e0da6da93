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
// The failures are finished first: they are held while the round runs, the round is judged
// degraded on all its checks when it ends, and its held failures are forgotten.
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
		endRound(ctx, t, pool, round)
	}
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "server.down", ev[0].Type)
}

// A round is judged on all its checks, never on the ones finished so far: failures (a refused
// connection, a name that does not resolve) finish faster than ok MCP checks, so they come first.
// 100 servers, 5 dead for good, finishing 5 ok, 5 failed, 90 ok: after down_after (2) rounds the
// five are down and no round was degraded, though after 10 checks half of them had failed.
func TestAFewDeadServersGoDownThoughTheirFailuresComeFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	servers := make([]int64, 100)
	for i := range servers {
		servers[i] = testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slugOf(i)})
	}
	dead := func(i int) bool { return i >= 5 && i < 10 }
	for range 2 {
		round := testfactory.Round(ctx, t, pool, nil)
		for i, s := range servers {
			outcome := "ok"
			if dead(i) {
				outcome = "error"
			}
			finish(ctx, t, pool, round, s, outcome, nil)
		}
		endRound(ctx, t, pool, round)
	}
	ev := events(ctx, t, pool)
	require.Len(t, ev, 5, "%+v", ev)
	for i, e := range ev {
		require.Equal(t, "server.down", e.Type)
		require.Equal(t, slugOf(5+i), e.Server)
		require.Len(t, e.Runs, 2, "both failed runs")
	}
	var degraded int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM alert_degraded_rounds`).Scan(&degraded))
	require.Zero(t, degraded)
	for i := range servers {
		want := "up"
		if dead(i) {
			want = "down"
		}
		require.Equal(t, want, state(ctx, t, pool, slugOf(i)).State, slugOf(i))
	}
}

// A failure held by a round that never ends (its prober died) is settled by the server's next run
// of another round: judged on the dead round's checks, it counts.
func TestAFailureOfARoundThatNeverEndsCountsAtTheServersNextRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "lonely"})
	died := testfactory.Round(ctx, t, pool, nil)
	finish(ctx, t, pool, died, srv, "failed", nil)
	require.Equal(t, 0, state(ctx, t, pool, "lonely").ConsecutiveFailed, "held while its round runs")
	next := testfactory.Round(ctx, t, pool, nil)
	finish(ctx, t, pool, next, srv, "failed", nil)
	require.Equal(t, 1, state(ctx, t, pool, "lonely").ConsecutiveFailed, "the dead round's failure counted")
	endRound(ctx, t, pool, next)
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "server.down", ev[0].Type)
}
