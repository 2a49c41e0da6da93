package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Review of 00017: its exclusive step waits at most 10 s for its locks; stopped there, it leaves
// probe_jobs unpartitioned with a NOT VALID (but enforced) CHECK that every job is requested
// before its cutoff, 2 days ahead. Run again after that day (and stopped again by a long
// reader), every new job was refused from the cutoff on. migrate now moves a stale cutoff ahead
// before it runs the migrations.
func TestAStoppedPartitionMigrationRunAgainAfterItsCutoffStillTakesJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t), dbtest.MaxConns(4))
	p, err := queries.Provider(pool)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, partitionsVersion-1)
	require.NoError(t, err)
	server := testfactory.Server(ctx, t, pool, nil)
	old := time.Now().UTC().Add(-5 * 24 * time.Hour)
	done := old.Add(time.Second)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &old, FinishedAt: &done, Outcome: "ok"})

	// A writer of servers holds its lock through 00017's exclusive step (its default partitions'
	// foreign keys lock servers), which gives up after 10 s: 00017 stops after its CHECKs.
	stopAt := func() {
		t.Helper()
		writer, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer writer.Rollback(ctx) //nolint:errcheck // nothing to keep
		_, err = writer.Exec(ctx, "UPDATE servers SET slug = slug WHERE id = $1", server)
		require.NoError(t, err)
		_, err = queries.Migrate(ctx, pool)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "55P03", pgErr.Code, "%v", err) // lock_not_available
	}
	stopAt()
	var partitioned bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('probe_jobs_legacy') IS NOT NULL").Scan(&partitioned))
	require.False(t, partitioned)

	// Its cutoff passed (as if it had stopped 3 days ago): the CHECK made then refuses today's job.
	cut := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	for _, stmt := range []string{
		`ALTER TABLE probe_jobs DROP CONSTRAINT probe_jobs_legacy_range, ADD CONSTRAINT probe_jobs_legacy_range CHECK (requested_at < '` + cut.Format(time.RFC3339) + `') NOT VALID`,
		`ALTER TABLE probe_runs DROP CONSTRAINT probe_runs_legacy_range, ADD CONSTRAINT probe_runs_legacy_range CHECK (job_requested_at < '` + cut.Format(time.RFC3339) + `') NOT VALID`,
		`UPDATE probe_partitions SET range_to = '` + cut.Format(time.RFC3339) + `' WHERE table_name IN ('probe_jobs_legacy', 'probe_runs_legacy')`,
	} {
		_, err = pool.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	_, err = pool.Exec(ctx, "INSERT INTO probe_jobs (server_id, reason) VALUES ($1, 'manual')", server)
	require.Error(t, err, "the stale CHECK lets a job in")

	// migrate again, stopped again by a reader: the cutoff is moved ahead, and jobs are taken.
	stopAt()
	var id int64
	require.NoError(t, pool.QueryRow(ctx, "INSERT INTO probe_jobs (server_id, reason, requested_at, finished_at, outcome) VALUES ($1, 'manual', now(), now(), 'ok') RETURNING id", server).Scan(&id))

	// And run once more without a reader, 00017 finishes: every job is kept, today's in the legacy
	// partition (before the new cutoff), tomorrow's and on in their days'.
	_, err = queries.Migrate(ctx, pool)
	require.NoError(t, err)
	var jobs, legacy int
	require.NoError(t, pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM probe_jobs), (SELECT count(*) FROM probe_jobs_legacy)").Scan(&jobs, &legacy))
	require.Equal(t, 2, jobs)
	require.Equal(t, 2, legacy)
	in := time.Now().UTC().Add(3 * 24 * time.Hour)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &in, FinishedAt: &in, Outcome: "ok"})
	var part string
	require.NoError(t, pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM probe_jobs WHERE requested_at = $1", in).Scan(&part))
	require.NotEqual(t, "probe_jobs_default", part)
	require.NotEqual(t, "probe_jobs_legacy", part)
}
