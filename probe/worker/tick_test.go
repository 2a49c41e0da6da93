package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/probe/worker"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// TestTickStartsNoRoundWhileThePreviousRoundsInvocationsAreQueued: the schedule says a round is
// due, but the previous round's invocations are still queued, then running; only when they are
// all over does the tick close that round and start the next. A running invocation past its own
// timeout belongs to a dead worker and no longer holds the schedule back.
func TestTickStartsNoRoundWhileThePreviousRoundsInvocationsAreQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	rs := settings.Default().Carried
	rs.Fanout = 2
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: 5 * time.Second, Actor: "test"})
	require.NoError(t, err)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	tick := func() int64 {
		id, err := worker.Tick(ctx, pool, "dev", "", false, client)
		require.NoError(t, err)
		return id
	}
	exec := func(sql string, args ...any) {
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}

	first := tick()
	require.NotZero(t, first, "no round yet: the first tick starts one")
	require.Equal(t, 3, countJobs(t, pool, first), "1 + fan-out invocations queued")
	require.Zero(t, tick(), "the schedule is not due yet")

	exec("UPDATE probe_rounds SET started_at = started_at - interval '1 minute' WHERE id = $1", first)
	require.Zero(t, tick(), "due, but the previous round's invocations are queued")

	exec("UPDATE river_job SET state = 'running', attempted_at = now(), attempted_by = '{w-1}', attempt = 1")
	require.Zero(t, tick(), "due, but the previous round's invocations are running")

	exec("UPDATE river_job SET attempted_at = now() - interval '1 hour'")
	second := tick()
	require.NotZero(t, second, "invocations running past their timeout belong to a dead worker")

	exec("UPDATE probe_rounds SET started_at = started_at - interval '1 minute' WHERE id = $1", second)
	exec("UPDATE river_job SET state = 'completed', finalized_at = now(), attempted_at = now(), attempted_by = '{w-1}', attempt = 1")
	third := tick()
	require.NotZero(t, third, "every invocation over: the next round starts")
	var finished *time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT finished_at FROM probe_rounds WHERE id = $1", second).Scan(&finished))
	require.NotNil(t, finished, "the tick closed the round whose invocations were all over")
}

func countJobs(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, round int64) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*)::int FROM river_job WHERE (args ->> 'round_id')::bigint = $1", round).Scan(&n))
	return n
}

// An invocation running on a worker whose heartbeat stopped (kill -9) does not hold the schedule
// back past the rule that judges rounds and workers dead (queries.RoundDeadAfter), however long
// its own timeout; one running on a live worker does, and so does one whose worker never wrote a
// heartbeat (judged by its timeout only).
func TestTickDoesNotWaitForAnInvocationOfADeadWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	rs := settings.Default().Carried
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: 5 * time.Second, Actor: "test"})
	require.NoError(t, err)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	tick := func() int64 {
		id, err := worker.Tick(ctx, pool, "dev", "", false, client)
		require.NoError(t, err)
		return id
	}
	exec := func(sql string, args ...any) {
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	first := tick()
	require.NotZero(t, first)
	exec("UPDATE probe_rounds SET started_at = started_at - interval '1 minute' WHERE id = $1", first)
	// Attempted a moment ago: well inside its own timeout (minutes at these settings).
	exec("UPDATE river_job SET state = 'running', attempted_at = now(), attempted_by = '{w-live, w-1}', attempt = 1")
	require.Zero(t, tick(), "a worker that never wrote a heartbeat is judged by the job's timeout")

	exec(`INSERT INTO probectl_workers (id, host, pid, version, max_workers, heartbeat_at)
	      VALUES ('w-1', 'h', 1, 'dev', 1, now()), ('w-live', 'h', 2, 'dev', 1, now() - interval '1 hour')`)
	require.Zero(t, tick(), "its worker beat a moment ago: the invocation is alive")

	exec("UPDATE probectl_workers SET heartbeat_at = now() - $1::interval - interval '1 second' WHERE id = 'w-1'",
		queries.RoundDeadAfter)
	second := tick()
	require.NotZero(t, second, "its worker (the last to attempt it) is silent for longer than a dead round's rule")

	exec("UPDATE probe_rounds SET started_at = started_at - interval '1 minute' WHERE id = $1", second)
	exec("UPDATE river_job SET state = 'running', attempted_at = now(), attempted_by = '{w-2}', attempt = 1")
	exec(`INSERT INTO probectl_workers (id, host, pid, version, max_workers, heartbeat_at, stopped_at)
	      VALUES ('w-2', 'h', 3, 'dev', 1, now(), now())`)
	require.NotZero(t, tick(), "a worker that stopped runs nothing")
}
