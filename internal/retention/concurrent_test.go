package retention_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// seedDays stores perDay finished jobs and their runs on each of the days back to days ago (not
// the last 2), in their partitions, without signatures.
func seedDays(t testing.TB, db queries.DBTX, days, perDay, servers int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	_, err := queries.EnsurePartitions(ctx, db, day(now).Add(-time.Duration(days)*24*time.Hour), now, false)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
		SELECT 'seed-' || g, 'https://seed-' || g || '.example/', 'http', 'standard', interval '15 minutes', now() + interval '1 day'
		  FROM generate_series(1, $1) AS g`, servers)
	require.NoError(t, err)
	// Without the rollup trigger: a run at a time it would take minutes for the benchmarks' sizes.
	_, err = db.Exec(ctx, "ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_rollup")
	require.NoError(t, err)
	_, err = db.Exec(ctx, `
		WITH j AS (
			INSERT INTO probe_jobs (server_id, requested_at, finished_at, outcome)
			SELECT s.id, date_trunc('day', now(), 'UTC') - make_interval(days => d) + make_interval(secs => 86000.0 * i / $2),
			       date_trunc('day', now(), 'UTC') - make_interval(days => d) + make_interval(secs => 86000.0 * i / $2 + 1), 'ok'
			  FROM generate_series(3, $1) AS d, generate_series(1, $2) AS i
			  JOIN LATERAL (SELECT id FROM servers WHERE slug = 'seed-' || (1 + i % $3)) AS s ON true
			RETURNING id, server_id, requested_at, finished_at)
		INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result)
		SELECT j.id, j.requested_at, j.server_id, j.requested_at, j.finished_at, 1, '{"outcome":"ok"}' FROM j`, days, perDay, servers)
	require.NoError(t, err)
	_, err = db.Exec(ctx, "ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_rollup")
	require.NoError(t, err)
	// Vacuumed, as old partitions are: otherwise autovacuum, busy with the fresh rows, holds the
	// partitions' locks and the prune's detaches wait behind it (13 s for 30 days of 5 M runs).
	_, err = db.Exec(ctx, "VACUUM (ANALYZE)")
	require.NoError(t, err)
}

// TestARoundFinishesWhilePruneWaitsForItsLock: prune detaches partitions while claims and finishes
// go on. The test holds a share lock on the oldest runs partition, so the prune's detach times out
// (after retention.LockTimeout) and retries, for as long as the test wants: finishes made meanwhile
// must all succeed, each waiting no longer than one try of the detach. The prober's sessions run
// with lock_timeout at the finish's budget (100 ms: docs/retention.md), so the database itself
// fails a claim or finish that waits longer than that for a lock queued behind the detach; a
// stopwatch would also count a loaded machine's slowness, which is not what the budget is about.
func TestARoundFinishesWhilePruneWaitsForItsLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url, dbtest.MaxConns(8))
	prober := dbtest.Pool(t, url, dbtest.MaxConns(2), lockTimeout(finishLockBudget))
	seedDays(t, pool, 12, 200, 50)
	now := time.Now().UTC()
	before := day(now).Add(-4 * 24 * time.Hour)
	_, err := archive.Export(ctx, pool, archive.Request{Path: filepath.Join(t.TempDir(), "a.jsonl"), Before: before, Who: "t"})
	require.NoError(t, err)

	// The prober: 40 servers due, claimed and finished one at a time.
	past := now.Add(-time.Minute)
	for range 40 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &past})
	}
	round := testfactory.Round(ctx, t, pool, nil)

	holder, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx) //nolint:errcheck // committed below
	oldest := "probe_runs_p" + day(now).Add(-12*24*time.Hour).Format("20060102")
	_, err = holder.Exec(ctx, "LOCK TABLE "+oldest+" IN ACCESS SHARE MODE")
	require.NoError(t, err)

	pruned := make(chan error, 1)
	go func() {
		_, err := retention.Prune(ctx, pool, retention.Request{Before: before, Now: now})
		pruned <- err
	}()
	// Wait until the prune is waiting on the held lock (a detach of the oldest partition queued).
	waitForWaiter(t, pool, oldest)

	finished := 0
	for range 40 {
		jobs, err := queries.Claim(ctx, prober, queries.ClaimParams{RoundID: round, Limit: 1})
		require.NoError(t, err, "a claim waited past the %s budget behind the detach", finishLockBudget)
		if len(jobs) == 0 {
			break
		}
		j := jobs[0]
		start := time.Now()
		r, err := queries.FinishTx(ctx, prober, queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID,
			ClaimedNextCheckAt: j.ClaimedNextCheckAt, Outcome: "ok", StartedAt: start, CheckFinishedAt: start, Requests: 1,
			Result: json.RawMessage(`{"outcome":"ok"}`)})
		require.NoError(t, err, "a finish waited past the %s budget behind the detach", finishLockBudget)
		require.True(t, r.JobFinished)
		finished++
	}
	select {
	case err := <-pruned:
		t.Fatalf("the prune ended while its partition was held: %v", err)
	default:
	}
	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, <-pruned)
	require.Equal(t, 40, finished)
	var kept int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_partitions WHERE dropped_at IS NOT NULL").Scan(&kept))
	require.Equal(t, 2*8, kept, "8 days (12 back to 5 back) of jobs and runs dropped")
}

// TestAPruneThatCannotGetItsLockGivesUpNamingThePartition: a partition held for longer than all
// the prune's tries makes it stop with a *retention.LockError naming the partition (exit 3 in
// the command), after its bounded tries, instead of waiting forever or failing unexplained. Each
// try ended on the database's lock_timeout (lock_not_available); the context's deadline only
// stops the test should a try wait without one.
func TestAPruneThatCannotGetItsLockGivesUpNamingThePartition(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pool := dbtest.Pool(t, migrated.NewDB(t), dbtest.MaxConns(4))
	seedDays(t, pool, 6, 10, 5)
	now := time.Now().UTC()
	holder, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx) //nolint:errcheck // only held
	oldest := "probe_runs_p" + day(now).Add(-6*24*time.Hour).Format("20060102")
	_, err = holder.Exec(ctx, "LOCK TABLE "+oldest+" IN ACCESS SHARE MODE")
	require.NoError(t, err)

	_, err = retention.Prune(ctx, pool, retention.Request{Before: day(now).Add(-4 * 24 * time.Hour), Now: now, WithoutExport: true})
	var locked *retention.LockError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, oldest, locked.Table)
	require.Equal(t, retention.LockTries, locked.Tries)
	require.ErrorContains(t, err, "pg_stat_activity")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, locked.Err, &pgErr)
	require.Equal(t, "55P03", pgErr.Code, "the last try ended on its lock_timeout")
	t.Logf("gave up after %v", locked.Waited.Round(time.Millisecond))
}

// finishLockBudget is the longest a claim or a finish may wait for a lock behind a prune's
// detach (docs/retention.md).
const finishLockBudget = 100 * time.Millisecond

// lockTimeout sets the pool's sessions' lock_timeout: a statement that waits longer for a lock
// fails with lock_not_available (55P03).
func lockTimeout(d time.Duration) dbtest.PoolOption {
	return func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["lock_timeout"] = fmt.Sprintf("%dms", d.Milliseconds())
	}
}

// waitForWaiter waits until a session waits for a lock on table.
func waitForWaiter(t *testing.T, db queries.DBTX, table string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		require.NoError(t, db.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks
			WHERE NOT granted AND relation = to_regclass($1)
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, table).Scan(&n))
		if n > 0 {
			return
		}
	}
	t.Fatalf("no session waited for a lock on %s", table)
}
