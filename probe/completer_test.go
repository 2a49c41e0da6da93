package probe

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// batchSizes is a pgx tracer that records how many jobs each batch of finishes held.
type batchSizes struct {
	mu    sync.Mutex
	sizes []int
	n     atomic.Int64
}

func (b *batchSizes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if n := batchJobs(data); n > 0 {
		b.mu.Lock()
		b.sizes = append(b.sizes, n)
		b.mu.Unlock()
	}
	return ctx
}
func (b *batchSizes) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// barrierChecker holds every check until n checks have started, then lets them all end at once,
// so that their finishes queue together.
type barrierChecker struct {
	n       int
	mu      sync.Mutex
	started int
	all     chan struct{}
}

func (c *barrierChecker) Check(ctx context.Context, t check.Target) check.Result {
	c.mu.Lock()
	c.started++
	if c.started == c.n {
		close(c.all)
	}
	c.mu.Unlock()
	select {
	case <-c.all:
	case <-ctx.Done():
	}
	return (&okChecker{}).Check(ctx, t)
}

// Finishes are committed many per transaction, and a batch that fails (here one job's run is
// refused by the database) is finished again one job at a time: every other job of the batch
// ends with exactly one run, and only the refused one stays open, visibly.
func TestABatchOfFinishesThatFailsIsFinishedOneJobAtATime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sizes := &batchSizes{}
	pool := migrated.Pool(t, dbtest.MaxConns(8), dbtest.Tracer(sizes))
	const servers = 10
	ids := dueServers(t, pool, servers)
	refused := ids[3]
	_, err := pool.Exec(ctx, strings.Replace(testSQL(t, "refuse_runs_of_server.sql"), "NEW.server_id = 0",
		"NEW.server_id = "+strconv.FormatInt(refused, 10), 1))
	require.NoError(t, err)

	s := testSettings(FinishTx)
	s.Concurrency, s.ClaimLimit = servers, servers
	log := &syncBuffer{}
	r := &Round{DB: pool, Settings: s, Checker: &barrierChecker{n: servers, all: make(chan struct{})},
		Log: slog.New(slog.NewTextHandler(log, nil))}
	sum, err := r.Run(ctx)
	var incomplete *IncompleteError
	require.ErrorAs(t, err, &incomplete, "the refused job's finish is a problem of the round")
	require.Len(t, incomplete.Problems, 1)
	require.Contains(t, incomplete.Problems[0], "refuses the runs of server")

	// The failed batch is counted by its cause in the summary, and every job it held says why it
	// was finished alone.
	// One batch held the refused job; its fallbacks are finishes alone, not batches.
	require.Equal(t, 1, sum.FinishBatches.Failed)
	require.GreaterOrEqual(t, sum.FinishBatches.Batches, 1)
	cause := "P0001: this test refuses the runs of server " + strconv.FormatInt(refused, 10)
	require.Equal(t, map[string]int{cause: sum.FinishBatches.Failed}, sum.FinishBatches.Causes)
	require.Contains(t, log.String(), "a batch of finishes failed; its jobs are finished one at a time")
	require.GreaterOrEqual(t, strings.Count(log.String(), "finishing the job alone: its batch failed"), sum.FinishBatches.Failed,
		"every job of a failed batch logs why it is finished alone")
	require.Contains(t, log.String(), "cause=\"its batch failed: finish")

	sizes.mu.Lock()
	biggest := 0
	for _, n := range sizes.sizes {
		biggest = max(biggest, n)
	}
	sizes.mu.Unlock()
	require.Greater(t, biggest, 1, "no batch held more than one finish: %v", sizes.sizes)

	jobs, err := queries.ListRoundJobs(ctx, pool, sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, servers)
	for _, j := range jobs {
		if j.ServerID == refused {
			require.Nil(t, j.FinishedAt, "the refused job stays open")
			require.Nil(t, j.RunID)
			continue
		}
		require.NotNil(t, j.FinishedAt, "job %d of server %d left open", j.JobID, j.ServerID)
		require.NotNil(t, j.RunID, "job %d of server %d has no run", j.JobID, j.ServerID)
	}
	require.Equal(t, servers-1, sum.Runs)
}
