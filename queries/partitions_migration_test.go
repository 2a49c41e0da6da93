package queries_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

const partitionsVersion = 17

// TestThePartitionMigrationKeepsEveryRowAndBlocksReadersBriefly migrates a database with runs
// (PROBECTL_PARTITION_MIGRATION_RUNS of them, 20,000 by default) to 00017 while another connection
// reads a job by id in a loop, and reports the longest read: the time the exclusive step held its
// lock (README, upgrade note).
func TestThePartitionMigrationKeepsEveryRowAndBlocksReadersBriefly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := 20000
	if v := os.Getenv("PROBECTL_PARTITION_MIGRATION_RUNS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t), dbtest.MaxConns(4))
	p, err := queries.Provider(pool)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, partitionsVersion-1)
	require.NoError(t, err)

	servers := max(n/50, 1)
	_, err = pool.Exec(ctx, `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval)
		SELECT 's' || g, 'https://s' || g || '.example/', 'http', 'standard', interval '15 minutes' FROM generate_series(1, $1) AS g`, servers)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO probe_jobs (server_id, requested_at, finished_at, outcome)
		SELECT 1 + g % $2, now() - interval '60 days' * g / $1, now() - interval '60 days' * g / $1 + interval '1 second', 'ok'
		  FROM generate_series(1, $1) AS g`, n, servers)
	require.NoError(t, err)
	// Seeded without the rollup trigger (a run at a time it would take hours for millions).
	_, err = pool.Exec(ctx, "ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_rollup")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO probe_runs (job_id, server_id, started_at, finished_at, requests, result)
		SELECT j.id, j.server_id, j.requested_at, j.finished_at, 1, '{"outcome":"ok"}' FROM probe_jobs AS j`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_rollup")
	require.NoError(t, err)
	open := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: 1})
	_, err = pool.Exec(ctx, "ANALYZE")
	require.NoError(t, err)

	var longest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			var id int64
			if err := pool.QueryRow(ctx, "SELECT id FROM probe_jobs WHERE id = $1", open).Scan(&id); err != nil {
				t.Errorf("a read during the migration: %v", err)
				return
			}
			if d := time.Since(start).Nanoseconds(); d > longest.Load() {
				longest.Store(d)
			}
		}
	})
	start := time.Now()
	_, err = p.UpTo(ctx, partitionsVersion)
	took := time.Since(start)
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	t.Logf("00017 on %d runs: migration %v, longest read of a job during it %v", n, took.Round(time.Millisecond),
		time.Duration(longest.Load()).Round(time.Millisecond))

	var jobs, runs, legacy, openJobs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM probe_jobs), (SELECT count(*) FROM probe_runs),
		(SELECT count(*) FROM probe_runs_legacy), (SELECT count(*) FROM probe_open_jobs WHERE job_id = $1)`, open).
		Scan(&jobs, &runs, &legacy, &openJobs))
	require.Equal(t, n+1, jobs)
	require.Equal(t, n, runs)
	require.Equal(t, n, legacy)
	require.Equal(t, 1, openJobs, "the open job holds its server after the migration")

	// New jobs go on from the legacy ids.
	server := testfactory.Server(ctx, t, pool, nil)
	var last int64
	require.NoError(t, pool.QueryRow(ctx, "INSERT INTO probe_jobs (server_id) VALUES ($1) RETURNING id", server).Scan(&last))
	require.Greater(t, last, open)
}

// TestThePartitionMigrationRollsBackAndForth: goose down copies the rows stored since 00017 back
// into the legacy tables, which become the tables again, and up partitions them once more.
func TestThePartitionMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t), dbtest.MaxConns(4))
	p, err := queries.Provider(pool)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, partitionsVersion-1)
	require.NoError(t, err)
	server := testfactory.Server(ctx, t, pool, nil)
	before := time.Now().Add(-time.Hour)
	fin := before.Add(time.Second)
	old := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &before, FinishedAt: &fin, Outcome: "ok"})
	testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: old, ServerID: server})
	_, err = p.UpTo(ctx, partitionsVersion)
	require.NoError(t, err)
	now := time.Now().UTC()
	open := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &now})
	later := now.Add(30 * 24 * time.Hour) // the default partition
	other := testfactory.Server(ctx, t, pool, nil)
	far := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: other, RequestedAt: &later, FinishedAt: &later, Outcome: "ok"})
	testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: far, ServerID: other})

	_, err = p.DownTo(ctx, partitionsVersion-1)
	require.NoError(t, err)
	var kind string
	var jobs, runs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT c.relkind::text, (SELECT count(*) FROM probe_jobs), (SELECT count(*) FROM probe_runs)
		FROM pg_class AS c WHERE c.oid = 'probe_jobs'::regclass`).Scan(&kind, &jobs, &runs))
	require.Equal(t, "r", kind, "probe_jobs is a plain table again")
	require.Equal(t, 3, jobs)
	require.Equal(t, 2, runs)
	// Layer 4 is the partial index again; new jobs take ids after the copied ones.
	_, err = pool.Exec(ctx, "INSERT INTO probe_jobs (server_id) VALUES ($1)", server)
	require.ErrorContains(t, err, "probe_jobs_one_open_per_server")
	var id int64
	require.NoError(t, pool.QueryRow(ctx, "INSERT INTO probe_jobs (server_id, finished_at, outcome) VALUES ($1, now(), 'ok') RETURNING id", server).Scan(&id))
	require.Greater(t, id, far)
	require.Greater(t, id, open)

	_, err = p.UpTo(ctx, partitionsVersion)
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM probe_jobs), (SELECT count(*) FROM probe_open_jobs)").Scan(&jobs, &runs))
	require.Equal(t, 4, jobs)
	require.Equal(t, 1, runs, "the open job holds its server again")
}
