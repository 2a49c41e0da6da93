package retention_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/retention"
)

// benchRunsPerDay is how many runs each of 60 days holds (PROBECTL_BENCH_RUNS_PER_DAY, else 5,000:
// 300,000 runs, which a shared machine seeds in a minute; the 5 M runs is 83,333 a day).
func benchRunsPerDay(b *testing.B) int {
	if v := os.Getenv("PROBECTL_BENCH_RUNS_PER_DAY"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		return n
	}
	return 5000
}

// BenchmarkExportThenPruneThirtyDays seeds 60 days of runs, exports the oldest 30 and prunes them,
// and reports export runs/s and the prune's seconds (go test -run '^$' -bench ExportThenPrune
// -benchtime 1x ./internal/retention/).
func BenchmarkExportThenPruneThirtyDays(b *testing.B) {
	ctx := b.Context()
	perDay := benchRunsPerDay(b)
	for range b.N {
		b.StopTimer()
		pool := dbtest.Pool(b, migrated.NewDB(b), dbtest.MaxConns(4))
		seedDays(b, pool, 62, perDay, 1000)
		now := time.Now().UTC()
		before := day(now).Add(-32 * 24 * time.Hour)
		b.StartTimer()
		start := time.Now()
		e, err := archive.Export(ctx, pool, archive.Request{Path: filepath.Join(b.TempDir(), "a.jsonl.gz"), Before: before, Who: "bench"})
		require.NoError(b, err)
		exportTook := time.Since(start)
		start = time.Now()
		pruned, err := retention.Prune(ctx, pool, retention.Request{Before: before, Now: now})
		require.NoError(b, err)
		pruneTook := time.Since(start)
		b.ReportMetric(float64(e.Runs)/exportTook.Seconds(), "export_runs/s")
		b.ReportMetric(pruneTook.Seconds(), "prune_s")
		b.ReportMetric(float64(len(pruned)), "days_pruned")
		b.ReportMetric(float64(e.Runs), "runs_exported")
	}
}
