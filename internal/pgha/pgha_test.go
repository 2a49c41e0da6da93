package pgha

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The signal a process can read at once that the database it talks to was promoted: the timeline
// of the current WAL file. (pg_control_checkpoint().timeline_id keeps the old timeline until the
// first checkpoint after the promotion, tens of seconds later.) Read right after `pg_ctl promote`,
// without a checkpoint.
func TestTheCurrentWALFilesTimelineChangesAtOnceOnPromotion(t *testing.T) {
	ctx := context.Background()
	p, err := Start(ctx, Options{Synchronous: false, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop() })
	timeline := func(url string) string {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var name string
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&name))
		return name[:8]
	}
	before := timeline(p.Primary.URL("postgres"))
	require.NoError(t, p.KillPrimary())
	start := time.Now()
	require.NoError(t, p.Promote(ctx))
	after := timeline(p.StandbyURL("postgres"))
	t.Logf("timeline %s -> %s, read %s after the promotion began", before, after, time.Since(start))
	require.NotEqual(t, before, after)

	conn, err := pgx.Connect(ctx, p.StandbyURL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var checkpointTimeline int
	require.NoError(t, conn.QueryRow(ctx, `SELECT timeline_id FROM pg_control_checkpoint()`).Scan(&checkpointTimeline))
	t.Logf("pg_control_checkpoint().timeline_id right after: %d", checkpointTimeline)

	var url string = p.MultiHostURL("postgres")
	c2, err := pgx.Connect(ctx, url)
	require.NoError(t, err, "the multi-host URL finds the new primary")
	defer c2.Close(ctx)
	var readOnly string
	require.NoError(t, c2.QueryRow(ctx, `SHOW transaction_read_only`).Scan(&readOnly))
	require.Equal(t, "off", readOnly)
	require.True(t, strings.HasPrefix(after, "0000000"))
}
