package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Review of 00017: maintenance made every range in one transaction and waited for its locks as
// long as it took, so a finish queued behind its lock on servers (the new partitions' foreign
// keys) waited for whatever the maintenance waited for. Now each range waits at most
// queries.PartitionLockTimeout and is tried again: a writer of servers queued behind it gets
// through while the maintenance still waits.
func TestMaintenanceWaitingForALockDoesNotHoldUpAFinish(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	held := testfactory.Server(ctx, t, pool, nil)
	finishing := testfactory.Server(ctx, t, pool, nil)

	// A long transaction holds a row of servers (ROW EXCLUSIVE on the table).
	long, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer long.Rollback(ctx) //nolint:errcheck // ended below
	_, err = long.Exec(ctx, "UPDATE servers SET slug = slug WHERE id = $1", held)
	require.NoError(t, err)

	// Maintenance of 3 days back (never made) waits for servers behind it.
	from := time.Now().UTC().Truncate(24 * time.Hour).Add(-5 * 24 * time.Hour)
	done := make(chan error, 1)
	var made []queries.Partition
	go func() {
		var err error
		made, err = queries.EnsurePartitions(context.Background(), pool, from, from.Add(3*24*time.Hour), false)
		done <- err
	}()
	dbtest.WaitForLockWait(t, pool, "probe_partitions_ensure_next", "maintenance never waited for servers")

	// A finish's write of another server gets through while the long transaction is still open.
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = pool.Exec(fctx, "UPDATE servers SET next_check_at = now() WHERE id = $1", finishing)
	require.NoError(t, err, "a write of servers waited behind maintenance")

	require.NoError(t, long.Rollback(ctx))
	require.NoError(t, <-done)
	require.Len(t, made, 6) // 3 days, jobs and runs
}
