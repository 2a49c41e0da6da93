package probe

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// BenchmarkTwentyClaimersOfFive measures claims of five by 20 concurrent claimers on 20,000 due
// servers (with a day of analyzed job history, as in production) whose new jobs never finish, and
// reports the share of jobs that double-claimed a server: 0
// for probe_claim_lease as shipped, most of them for a lock taken inside the reading statement with the
// unique index off (85–92% when the claim was designed: docs/invariant.md).
func BenchmarkTwentyClaimersOfFive(b *testing.B) {
	variants := []struct {
		name      string
		dropIndex bool
		claim     func(b *testing.B) claimFunc
	}{
		{"probe_claim_lease as shipped", false, func(*testing.B) claimFunc {
			return func(ctx context.Context, db queries.DBTX, round int64) (int, error) {
				jobs, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: 5})
				return len(jobs), err
			}
		}},
		{"lock inside the reading statement, no unique index", true, func(b *testing.B) claimFunc {
			return lockInsideClaim(b, 5)
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			pool := dbtest.Pool(b, migrated.NewDB(b), dbtest.MaxConns(24))
			if v.dropIndex {
				dropUniqueIndex(b, pool)
			}
			_, err := pool.Exec(ctx, testSQL(b, "claim_lock_inside.sql"))
			require.NoError(b, err)
			_, err = pool.Exec(ctx, testSQL(b, "many_servers.sql"), 20000)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, testSQL(b, "job_history.sql"))
			require.NoError(b, err)
			round := testfactory.Round(ctx, b, pool, nil)
			claim := v.claim(b)

			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 20 {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if _, err := claim(ctx, pool, round); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			counts, err := queries.CountRound(ctx, pool, round)
			require.NoError(b, err)
			if counts.Jobs > 0 {
				b.ReportMetric(100*float64(counts.Jobs-counts.Servers)/float64(counts.Jobs), "%double-claimed")
			}
		})
	}
}
