package alerts_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Batch finishes of one round, concurrent, with both kinds and every outcome: the alerts' rows
// (the round's tally shards, the servers' states) are taken in key order, the degraded
// judgement never waits on a lock, so no two batches deadlock, and the round (70 % failed) is
// degraded exactly once, when it ends, with no server taken down.
func TestConcurrentBatchFinishesOfARoundNeverDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t, dbtest.MaxConns(8))
	const batches, per = 6, 20
	round := testfactory.Round(ctx, t, pool, nil)
	params := make([][]queries.FinishParams, batches)
	now := time.Now().UTC()
	for b := range params {
		for i := range per {
			kind := []string{"http", "mcp"}[(b+i)%2]
			outcome := []string{"ok", "failed", "error", "failed", "error", "ok", "failed", "error", "ok", "failed"}[(b*per+i)%10]
			srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("b%d-%d", b, i), Kind: kind})
			job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
			res, _ := json.Marshal(map[string]any{"outcome": outcome, "summary": outcome, "requests": []any{}})
			var requested time.Time
			require.NoError(t, pool.QueryRow(ctx, "SELECT requested_at FROM probe_jobs WHERE id = $1", job).Scan(&requested))
			params[b] = append(params[b], queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: now,
				Outcome: outcome, StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: res, Kind: kind,
				RequestedAt: &requested})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, batches)
	start := make(chan struct{})
	for b := range params {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var out []queries.BatchFinish
			out, errs[b] = queries.FinishBatch(ctx, pool, params[b])
			for _, o := range out {
				errs[b] = cmp.Or(errs[b], o.Err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	endRound(ctx, t, pool, round)
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "prober.degraded", ev[0].Type)
}
