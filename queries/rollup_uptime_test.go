package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// uptimeOracle reads, for each of ids (in id order), its rollup's last run and uptime, and the
// uptime its days say (the 30 days up to its last run's), for a test to hold the one to the
// other; uptimes as text, "NULL" for none.
func uptimeOracle(ctx context.Context, t *testing.T, db queries.DBTX, ids ...int64) (last []int64, uptime, days []string) {
	t.Helper()
	require.NoError(t, db.QueryRow(ctx, `SELECT array_agg(r.last_run_id ORDER BY r.server_id),
		       array_agg(coalesce(round(r.uptime_30d::numeric, 9)::text, 'NULL') ORDER BY r.server_id),
		       array_agg(coalesce(round((SELECT sum(d.ok)::numeric / nullif(sum(d.counted), 0) FROM server_run_days AS d
		                   WHERE d.server_id = r.server_id AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30), 9)::text, 'NULL')
		                 ORDER BY r.server_id)
		  FROM server_rollups AS r WHERE r.server_id = ANY ($1)`, ids).Scan(&last, &uptime, &days))
	require.Len(t, last, len(ids))
	return last, uptime, days
}

// runJobs makes a job for each server, requested at its time and finished, for insertRuns.
func runJobs(ctx context.Context, t *testing.T, pool *pgxpool.Pool, servers []int64, at []time.Time) []int64 {
	t.Helper()
	jobs := make([]int64, len(servers))
	for i := range servers {
		jobs[i] = testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: servers[i], RequestedAt: &at[i], FinishedAt: &at[i]})
	}
	return jobs
}

// insertRuns stores one statement of runs (the statement trigger's path: two runs or more), one
// per job of runJobs, each started at its time with its outcome, and returns their ids in the
// order given.
func insertRuns(ctx context.Context, db queries.DBTX, jobs, servers []int64, at []time.Time, outcomes []string) ([]int64, error) {
	var ids []int64
	err := db.QueryRow(ctx, `WITH i AS (
		INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result)
		SELECT j, r, s, r, r + interval '1 second', 1, jsonb_build_object('outcome', o, 'summary', o, 'requests', '[]'::jsonb)
		  FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::text[]) AS u(j, r, s, o)
		RETURNING id, job_id)
		SELECT array_agg(i.id ORDER BY u.n) FROM i JOIN unnest($1::bigint[]) WITH ORDINALITY AS u(j, n) ON u.j = i.job_id`,
		jobs, at, servers, outcomes).Scan(&ids)
	return ids, err
}

// storeRuns is runJobs then insertRuns, on pool.
func storeRuns(ctx context.Context, t *testing.T, pool *pgxpool.Pool, servers []int64, at []time.Time, outcomes []string) []int64 {
	t.Helper()
	ids, err := insertRuns(ctx, pool, runJobs(ctx, t, pool, servers, at), servers, at, outcomes)
	require.NoError(t, err)
	return ids
}

// 00028 rolls back and forth: after it the rollups' statement trigger writes a server's uptime in
// the upsert of its last run, before it (00023's body) in an UPDATE of its own; on either side a
// statement of runs leaves each server its last run and the uptime its days say: servers with
// mixed outcomes, one whose run comes out of order (it counts, it does not replace the last run)
// and one with its first run.
func TestTheRollupUptimeMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	state := func() (settings []string, once bool) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(proconfig, '{}'), prosrc LIKE '%uptime_30d     = EXCLUDED.uptime_30d%'
			FROM pg_proc WHERE proname = 'probe_runs_rollup_batch' AND pronamespace = 'public'::regnamespace`).Scan(&settings, &once))
		return settings, once
	}
	a := testfactory.Server(ctx, t, pool, nil)
	b := testfactory.Server(ctx, t, pool, nil)
	at := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	calls := 0
	// runs stores a statement of runs: a's, ok and failed in turn; b's, in order the first time,
	// then failed and out of order (started before its last run); and a new server's first run,
	// failed. Then every rollup must hold its last run and the uptime its days say.
	runs := func() {
		t.Helper()
		calls++
		at = at.Add(time.Minute)
		c := testfactory.Server(ctx, t, pool, nil)
		servers, times, outcomes := []int64{a, b, c}, []time.Time{at, at, at}, []string{"ok", "ok", "failed"}
		if calls%2 == 0 {
			outcomes[0] = "failed"
		}
		var lastB int64
		if calls > 1 {
			last, _, _ := uptimeOracle(ctx, t, pool, b)
			lastB, times[1], outcomes[1] = last[0], at.Add(-30*time.Minute), "failed"
		}
		ids := storeRuns(ctx, t, pool, servers, times, outcomes)
		last, uptime, days := uptimeOracle(ctx, t, pool, a, b, c)
		require.Equal(t, days, uptime, "each uptime as the server's days say (a, b, c)")
		require.Equal(t, ids[0], last[0], "a's run is its last")
		if calls > 1 {
			require.Equal(t, lastB, last[1], "b's run out of order does not replace its last")
		} else {
			require.Equal(t, ids[1], last[1])
		}
		require.Equal(t, ids[2], last[2], "c's first run")
	}
	settings, once := state()
	require.Equal(t, []string{"jit=off"}, settings)
	require.True(t, once, "the uptime in the rollup's upsert")
	runs()
	runs()
	_, err := p.DownTo(ctx, rollupUptimeVersion-1)
	require.NoError(t, err)
	settings, once = state()
	require.Equal(t, []string{"jit=off"}, settings, "as 00023 left them")
	require.False(t, once, "00023's UPDATE")
	runs()
	_, err = p.Up(ctx)
	require.NoError(t, err)
	settings, once = state()
	require.Equal(t, []string{"jit=off"}, settings)
	require.True(t, once)
	runs()
}

const rollupUptimeVersion = 28

// Two finishes of one server at once: the first stores a run of ten days ago (a replayed spool)
// and holds its transaction open; the second, a run of today, waits for the first's rollup of the
// server, locked (the server has one already) or being inserted (its first). Once the first
// commits, the second's uptime must count the first's day: the upsert reads the days after the
// lock, as the UPDATE it replaces did, and a server whose rollup was not there to lock gets its
// uptime from that UPDATE. (The alerts' trigger, which also locks each server's state in server
// order, is switched off here so that the rollups' own locks are what is tested.)
func TestARollupWrittenAfterAnotherFinishOfItsServerCountsThatFinishsDay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		hasRollup bool
		uptime    string // s's, in the end
	}{
		{"the server has a rollup", true, "0.666666667"}, // ok today (before), failed ten days ago, ok today
		{"the first rollup of the server", false, "0.500000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := migrated.Pool(t)
			_, err := pool.Exec(ctx, `ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_alert`)
			require.NoError(t, err)
			s := testfactory.Server(ctx, t, pool, nil)
			other1, other2 := testfactory.Server(ctx, t, pool, nil), testfactory.Server(ctx, t, pool, nil)
			today := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
			if tc.hasRollup {
				storeRuns(ctx, t, pool, []int64{s, other1}, []time.Time{today.Add(-time.Minute), today}, []string{"ok", "ok"})
			}

			first, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = first.Rollback(context.WithoutCancel(ctx)) }()
			// a failed run of s ten days ago: out of order, or its first; it counts in its day
			servers, at := []int64{s, other2}, []time.Time{today.AddDate(0, 0, -10), today}
			_, err = insertRuns(ctx, first, runJobs(ctx, t, pool, servers, at), servers, at, []string{"failed", "ok"})
			require.NoError(t, err)

			servers, at = []int64{s, other1}, []time.Time{today.Add(time.Minute), today.Add(time.Minute)}
			jobs := runJobs(ctx, t, pool, servers, at)
			second := make(chan error, 1)
			go func() {
				_, err := insertRuns(ctx, pool, jobs, servers, at, []string{"ok", "ok"})
				second <- err
			}()
			dbtest.WaitForLockWait(t, pool, "INSERT INTO probe_runs", "the second finish waits for the first")
			// ...at the rollups: past the totals and the days, which the two finishes share no row of
			var atRollups bool
			require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity AS a JOIN pg_locks AS l ON l.pid = a.pid
				 WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.query LIKE '%INSERT INTO probe_runs%'
				   AND l.relation = 'server_rollups'::regclass AND l.granted)`).Scan(&atRollups))
			require.True(t, atRollups, "the second finish waits with the rollups' table taken")
			require.NoError(t, first.Commit(ctx))
			require.NoError(t, <-second)

			_, uptime, days := uptimeOracle(ctx, t, pool, s)
			require.Equal(t, []string{tc.uptime}, days, "s's days")
			require.Equal(t, days, uptime, "s's uptime counts the first finish's day")
		})
	}
}

// The rollups' lock before the upsert stops at the first server without a rollup: from there on the
// upsert takes the rows, in server order, so a finish never holds a later server's rollup while it
// waits to insert an earlier one's (two finishes taking the same rows in two orders could
// deadlock). Here x has no rollup yet and another finish is inserting x's first; a finish of x
// and y waits for it at x, and y's rollup must still be free.
func TestTheRollupsLockStopsAtTheFirstServerWithoutOne(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, err := pool.Exec(ctx, `ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_alert`)
	require.NoError(t, err)
	x, y, z := testfactory.Server(ctx, t, pool, nil), testfactory.Server(ctx, t, pool, nil), testfactory.Server(ctx, t, pool, nil)
	require.Less(t, x, y)
	today := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	// y has a rollup (a statement of one run)
	storeRuns(ctx, t, pool, []int64{y}, []time.Time{today.Add(-time.Minute)}, []string{"ok"})

	// another finish inserts x's first rollup and holds it (days and totals of its own)
	holder, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.WithoutCancel(ctx)) }()
	servers, at := []int64{x, z}, []time.Time{today.AddDate(0, 0, -3), today.AddDate(0, 0, -3)}
	_, err = insertRuns(ctx, holder, runJobs(ctx, t, pool, servers, at), servers, at, []string{"failed", "failed"})
	require.NoError(t, err)

	servers, at = []int64{x, y}, []time.Time{today, today}
	jobs := runJobs(ctx, t, pool, servers, at)
	finish := make(chan error, 1)
	go func() {
		_, err := insertRuns(ctx, pool, jobs, servers, at, []string{"ok", "ok"})
		finish <- err
	}()
	dbtest.WaitForLockWait(t, pool, "INSERT INTO probe_runs", "the finish of x and y waits for x's first rollup")
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var id int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT server_id FROM server_rollups WHERE server_id = $1 FOR UPDATE NOWAIT`, y).Scan(&id),
		"y's rollup is not held by the finish waiting at x")
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, <-finish)
	_, uptime, days := uptimeOracle(ctx, t, pool, x, y)
	require.Equal(t, days, uptime)
}
