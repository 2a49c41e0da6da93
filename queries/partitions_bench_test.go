package queries_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// BenchmarkClaimAndFinishBeforeAndAfterPartitions claims one server and finishes its job, on a
// database stopped before 00017 (one table each) and on one migrated (60 daily partitions made
// back and 7 ahead), side by side in one run: go test -run '^$' -bench BeforeAndAfterPartitions
// -benchtime 2000x ./queries/
func BenchmarkClaimAndFinishBeforeAndAfterPartitions(b *testing.B) {
	for _, tc := range []struct {
		name        string
		partitioned bool
	}{{"unpartitioned_00016", false}, {"partitioned_00017_67_days", true}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := b.Context()
			pool := dbtest.Pool(b, dbtest.NewEmptyDB(b), dbtest.MaxConns(2))
			p, err := queries.Provider(pool)
			require.NoError(b, err)
			if tc.partitioned {
				_, err = p.Up(ctx)
				require.NoError(b, err)
				now := time.Now().UTC()
				_, err = queries.EnsurePartitions(ctx, pool, now.Add(-60*24*time.Hour), now, false)
				require.NoError(b, err)
			} else {
				_, err = p.UpTo(ctx, partitionsVersion-1)
				require.NoError(b, err)
			}
			_, err = pool.Exec(ctx, `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
				SELECT 'b' || g, 'https://b' || g || '.example/', 'http', 'standard', interval '15 minutes', now() - interval '1 hour'
				  FROM generate_series(1, $1) AS g`, b.N)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, "ANALYZE")
			require.NoError(b, err)
			round := testfactory.Round(ctx, b, pool, nil)
			var claiming, finishing time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 1})
				require.NoError(b, err)
				require.Len(b, jobs, 1)
				j := jobs[0]
				now := time.Now()
				claiming += now.Sub(start)
				_, err = queries.FinishTx(ctx, pool, queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID,
					ClaimedNextCheckAt: j.ClaimedNextCheckAt, Outcome: "ok", StartedAt: now, CheckFinishedAt: now, Requests: 1,
					Result: json.RawMessage(`{"outcome":"ok"}`)})
				require.NoError(b, err)
				finishing += time.Since(now)
			}
			b.ReportMetric(claiming.Seconds()*1000/float64(b.N), "claim_ms")
			b.ReportMetric(finishing.Seconds()*1000/float64(b.N), "finish_ms")
		})
	}
}
