package queries_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// previousUpsertWorker is the previous binary's heartbeat (queries/workers.sql before 00030),
// which does not name spool_set_aside.
const previousUpsertWorker = `INSERT INTO probectl_workers (id, host, pid, version, max_workers, invocations_running, spool_files,
                              spool_results, started_at, heartbeat_at)
VALUES ($1, 'h', 1, 'v0', 10, 0, 1, 2, clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO UPDATE
   SET version             = excluded.version,
       max_workers         = excluded.max_workers,
       invocations_running = excluded.invocations_running,
       spool_files         = excluded.spool_files,
       spool_results       = excluded.spool_results,
       heartbeat_at        = clock_timestamp(),
       stopped_at          = NULL`

// 00030 rolls back and forth: after it a worker's heartbeat says what its spool set aside, and
// the previous binary's heartbeat (which does not name the column) still writes, twice (insert,
// then the conflict's update), with 0; before it, the previous binary's heartbeat works as it did.
func TestTheWorkerSpoolSetAsideMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	aside := func(id string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT spool_set_aside FROM probectl_workers WHERE id = $1`, id).Scan(&n))
		return n
	}
	previousBeats := func(pool *pgxpool.Pool, id string) {
		for range 2 {
			_, err := pool.Exec(ctx, previousUpsertWorker, id)
			require.NoError(t, err)
		}
	}
	require.NoError(t, queries.UpsertWorker(ctx, pool, queries.WorkerBeat{ID: "new-1", Host: "h", PID: 1, Version: "v1",
		MaxWorkers: 10, SpoolFiles: 1, SpoolResults: 2, SpoolSetAside: 3}))
	require.Equal(t, 3, aside("new-1"))
	previousBeats(pool, "old-1")
	require.Equal(t, 0, aside("old-1"))

	_, err := p.DownTo(ctx, workerSpoolSetAsideVersion-1)
	require.NoError(t, err)
	previousBeats(pool, "old-2")
	previousBeats(pool, "new-1")

	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.NoError(t, queries.UpsertWorker(ctx, pool, queries.WorkerBeat{ID: "new-1", Host: "h", PID: 1, Version: "v1",
		MaxWorkers: 10, SpoolSetAside: 1}))
	require.Equal(t, 1, aside("new-1"))
}

const workerSpoolSetAsideVersion = 30
