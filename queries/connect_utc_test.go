package queries_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/queries"
)

// Every timestamptz a pool of queries.Connect (or dbtest.Pool) scans is in UTC, whatever the
// session's TimeZone and in either wire format: callers never call .UTC() on what they read.
func TestScannedTimesAreUTC(t *testing.T) {
	t.Parallel()
	url := migrated.NewDB(t)
	if strings.Contains(url, "?") {
		url += "&timezone=Asia%2FShanghai"
	} else {
		url += "?timezone=Asia%2FShanghai"
	}
	ctx := context.Background()
	pool, err := queries.Connect(ctx, url, "test", queries.ConnectOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	pools := map[string]queries.DBTX{"queries.Connect": pool, "dbtest.Pool": dbtest.Pool(t, url)}
	want := time.Date(2026, 11, 30, 20, 15, 30, 123456000, time.UTC)
	for name, db := range pools {
		var zone string
		require.NoError(t, db.QueryRow(ctx, "SHOW TimeZone").Scan(&zone))
		require.Equal(t, "Asia/Shanghai", zone, "%s: the session must not be in UTC for this test to mean anything", name)
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
			var one time.Time
			var some []time.Time
			var maybe *time.Time
			require.NoError(t, db.QueryRow(ctx, "SELECT $1::timestamptz, ARRAY[$1::timestamptz], $1::timestamptz",
				mode, want).Scan(&one, &some, &maybe))
			for _, got := range []time.Time{one, some[0], *maybe} {
				require.True(t, got.Equal(want), "%s, %v: %v is not the instant written", name, mode, got)
				require.Same(t, time.UTC, got.Location(), "%s, %v: %v is not in UTC", name, mode, got)
			}
		}
	}
}
