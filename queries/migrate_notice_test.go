package queries

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

// `probectl migrate` warns before applying 00007 to a database with many runs (its backfill makes
// finishes wait), and says nothing when 00007 is applied or the runs are few.
func TestMigrateWarnsBeforeTheHistoryBackfillOnADatabaseWithManyRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t))
	notes, err := MigrationNotices(ctx, pool)
	require.NoError(t, err)
	assert.Empty(t, notes, "an empty database")
	p, err := provider(pool)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, historyMigration-1)
	require.NoError(t, err)

	notes, err = MigrationNotices(ctx, pool)
	require.NoError(t, err)
	assert.Empty(t, notes, "no runs yet")

	_, err = pool.Exec(ctx, `
		INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
		SELECT 'n-' || i, 'https://n.example/', 'http', 'standard', interval '12 hours', now()
		  FROM generate_series(1, 100) AS i`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		INSERT INTO probe_jobs (server_id, reason, requested_at, finished_at, outcome)
		SELECT s.id, 'scheduled', now() - make_interval(hours => k), now() - make_interval(hours => k), 'ok'
		  FROM servers AS s CROSS JOIN generate_series(1, $1::int / 100) AS k`, NoticeRuns)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		INSERT INTO probe_runs (job_id, server_id, started_at, finished_at, requests, result)
		SELECT j.id, j.server_id, j.requested_at, j.finished_at, 1, '{"outcome":"ok"}' FROM probe_jobs AS j`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE probe_runs`) // as autovacuum would have
	require.NoError(t, err)

	notes, err = MigrationNotices(ctx, pool)
	require.NoError(t, err)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "00007")
	assert.Contains(t, notes[0], "about 10000 runs")
	assert.Contains(t, notes[0], "stop `run round` and `probectl worker`")

	_, err = p.Up(ctx)
	require.NoError(t, err)
	notes, err = MigrationNotices(ctx, pool)
	require.NoError(t, err)
	assert.Empty(t, notes, "00007 is applied")
}
