package history_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/queries"
)

// BenchmarkServerViews loads a directory with a month of runs, migrates it to 00007 (timing the
// backfill of the rollup), and times what the history views do beside a primary-key lookup of a
// run on the same data (the floor): servers show, the page /servers/SLUG, the page /servers and
// runs list --server. It prints the median of PROBECTL_BENCH_REPS (default 5) reads of each, and
// their ratios to the floor.
//
// The default size is small so `make bench` stays short:
//
//	go test -run='^$' -bench=ServerViews -benchtime=1x ./internal/history/
//
// The size of the issue (100,000 servers, 5,000,000 runs over 30 days):
//
//	PROBECTL_BENCH_SERVERS=100000 PROBECTL_BENCH_RUNS=5000000 go test -run='^$' -bench=ServerViews \
//	    -benchtime=1x -timeout=60m ./internal/history/
func BenchmarkServerViews(b *testing.B) {
	servers := envInt(b, "PROBECTL_BENCH_SERVERS", 2_000)
	runs := envInt(b, "PROBECTL_BENCH_RUNS", 100_000)
	reps := envInt(b, "PROBECTL_BENCH_REPS", 5)
	perServer := max(runs/servers, 1)
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(30 * 24 * time.Hour)
	ctx := context.Background()

	url := dbtest.NewEmptyDB(b)
	pool := dbtest.Pool(b, url) // no statement timeout: a large load may take long
	db := stdlib.OpenDBFromPool(pool)
	b.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS("../../queries/migrations"), goose.WithDisableGlobalRegistry(true))
	require.NoError(b, err)
	const historyVersion = 7
	var before int64
	for _, s := range p.ListSources() {
		if s.Version < historyVersion {
			before = max(before, s.Version)
		}
	}
	_, err = p.UpTo(ctx, before)
	require.NoError(b, err)

	load, err := os.ReadFile("testdata/bench_load.sql")
	require.NoError(b, err)
	t0 := time.Now()
	args := [][]any{{servers, start}, {perServer, start}, {}}
	for i, stmt := range strings.Split(string(load), ";\n\n") {
		_, err = pool.Exec(ctx, stmt, args[i]...)
		require.NoError(b, err)
	}
	b.Logf("loaded %d servers x %d runs over 30 days in %s", servers, perServer, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	_, err = p.Up(ctx)
	require.NoError(b, err)
	b.Logf("migration 00007 and later (backfilling the rollup) took %s", time.Since(t0).Round(time.Millisecond))
	_, err = pool.Exec(ctx, "VACUUM ANALYZE")
	require.NoError(b, err)

	slug := fmt.Sprintf("s-%07d", servers/2)
	var runID int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT max(id) / 2 FROM probe_runs`).Scan(&runID))
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return now }})
	page := func(path string) func() error {
		return func() error {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK {
				return fmt.Errorf("%s: %d", path, rec.Code)
			}
			return nil
		}
	}
	cases := []struct {
		name string
		read func() error
	}{
		{"primary-key lookup of a run (floor)", func() error {
			var n int64
			return pool.QueryRow(ctx, `SELECT requests FROM probe_runs WHERE id = $1`, runID).Scan(&n)
		}},
		{"servers show SLUG", func() error { _, err := history.ShowServer(ctx, pool, slug, &now); return err }},
		{"GET /servers/SLUG", page("/servers/" + slug)},
		{"GET /servers", page("/servers")},
		{"GET /servers?sort=uptime&page=100", page("/servers?sort=uptime&page=100")},
		{"runs list --server SLUG", func() error {
			_, err := history.ListRuns(ctx, pool, queries.RunFilter{Server: slug, Limit: 50})
			return err
		}},
		{"runs list (no filter)", func() error {
			_, err := history.ListRuns(ctx, pool, queries.RunFilter{Limit: 50})
			return err
		}},
	}
	b.ResetTimer()
	var floor time.Duration
	out := fmt.Sprintf("\n%d servers, %d runs over 30 days; median of %d reads\n%-40s %12s %10s\n", servers, servers*perServer, reps, "read", "median", "x floor")
	for _, c := range cases {
		require.NoError(b, c.read()) // warm the cache and the statement cache
		times := make([]time.Duration, 0, reps)
		for range reps {
			t := time.Now()
			require.NoError(b, c.read())
			times = append(times, time.Since(t))
		}
		slices.Sort(times)
		med := times[len(times)/2]
		if floor == 0 {
			floor = med
		}
		out += fmt.Sprintf("%-40s %12s %10.1f\n", c.name, med.Round(time.Microsecond), float64(med)/float64(floor))
	}
	b.StopTimer()
	fmt.Print(out)
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	require.NoError(b, err, "%s", name)
	require.Positive(b, n, "%s", name)
	return n
}
