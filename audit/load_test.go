package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// testSQL reads a query only tests and the benchmark run, from testdata, so that it does not ship
// in the queries package.
func testSQL(tb testing.TB, name string) string {
	tb.Helper()
	sql, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err)
	return string(sql)
}

// loadMonth fills a scratch database with the benchmark's data set: servers standard servers,
// perServer jobs each over [start, start+span), and one duplicate for every dupEvery-th server.
// Secondary indexes and foreign keys of probe_jobs are dropped for the load and built afterwards,
// then both tables are vacuumed and analysed. Never point it at a database you care about.
func loadMonth(tb testing.TB, ctx context.Context, db queries.DBTX, servers, perServer int, start time.Time, span time.Duration, dupEvery int) {
	tb.Helper()
	rows, err := db.Query(ctx, testSQL(tb, "load_deferred.sql"))
	require.NoError(tb, err, "list probe_jobs indexes and keys")
	type deferred struct{ drop, create string }
	objects, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (deferred, error) {
		var d deferred
		err := row.Scan(&d.drop, &d.create)
		return d, err
	})
	require.NoError(tb, err, "list probe_jobs indexes and keys")
	for _, o := range objects {
		_, err := db.Exec(ctx, o.drop)
		require.NoError(tb, err, o.drop)
	}
	// The days' partitions first (as maintenance makes them ahead): without them every job lands
	// in probe_jobs_default, and the audit would read one unpartitioned table (00017).
	_, err = queries.EnsurePartitions(ctx, db, start, start.Add(span), false)
	require.NoError(tb, err, "make the partitions of the loaded days")
	_, err = db.Exec(ctx, testSQL(tb, "load_servers.sql"), servers, start)
	require.NoError(tb, err, "insert bench servers")
	_, err = db.Exec(ctx, testSQL(tb, "load_jobs.sql"), pgx.StrictNamedArgs{"per_server": perServer,
		"start": start, "span": span, "dup_every": dupEvery})
	require.NoError(tb, err, "insert bench jobs")
	for _, o := range objects {
		_, err := db.Exec(ctx, o.create)
		require.NoError(tb, err, o.create)
	}
	for _, name := range []string{"vacuum_jobs.sql", "vacuum_servers.sql"} {
		_, err := db.Exec(ctx, testSQL(tb, name))
		require.NoError(tb, err, name)
	}
}

// windowCount is the duplicate definition computed entirely in SQL with a window function: the
// jobs in [since, until) and how many were requested less than window after the previous job of
// their server. The tests' independent oracle for the streaming scan.
func windowCount(tb testing.TB, ctx context.Context, db queries.DBTX, since, until time.Time, window time.Duration) (jobs, pairs int64, err error) {
	if err := db.QueryRow(ctx, testSQL(tb, "window_count.sql"), since, until, window).Scan(&jobs, &pairs); err != nil {
		return 0, 0, fmt.Errorf("count duplicates in sql: %w", err)
	}
	return jobs, pairs, nil
}
