package retention_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
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
// and reports export runs/s and the prune's seconds, and the longest of the finishes a prober
// makes one after another while the prune runs (go test -run '^$' -bench ExportThenPrune
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
		// A prober claims and finishes one due server at a time for as long as the prune runs.
		past := now.Add(-time.Minute)
		for range 1000 {
			testfactory.Server(ctx, b, pool, &testfactory.ServerOpts{NextCheckAt: &past})
		}
		round := testfactory.Round(ctx, b, pool, nil)
		done := make(chan struct{})
		type finishes struct {
			n       int
			longest time.Duration
		}
		finished := make(chan finishes, 1)
		go func() {
			var f finishes
			defer func() { finished <- f }()
			for {
				select {
				case <-done:
					return
				default:
				}
				jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 1})
				if err != nil || len(jobs) == 0 {
					return
				}
				j := jobs[0]
				at := time.Now()
				r, err := queries.FinishTx(ctx, pool, queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID,
					ClaimedNextCheckAt: j.ClaimedNextCheckAt, Outcome: "ok", StartedAt: at, CheckFinishedAt: at, Requests: 1,
					Result: json.RawMessage(`{"outcome":"ok"}`)})
				if err != nil || !r.JobFinished {
					return
				}
				f.longest = max(f.longest, time.Since(at))
				f.n++
			}
		}()
		start = time.Now()
		pruned, err := retention.Prune(ctx, pool, retention.Request{Before: before, Now: now})
		pruneTook := time.Since(start)
		close(done)
		f := <-finished
		require.NoError(b, err)
		b.ReportMetric(float64(f.n), "finishes_during_prune")
		b.ReportMetric(float64(f.longest.Microseconds())/1000, "longest_finish_ms")
		b.ReportMetric(float64(e.Runs)/exportTook.Seconds(), "export_runs/s")
		b.ReportMetric(pruneTook.Seconds(), "prune_s")
		b.ReportMetric(float64(len(pruned)), "days_pruned")
		b.ReportMetric(float64(e.Runs), "runs_exported")
	}
}
