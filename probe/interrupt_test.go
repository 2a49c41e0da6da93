package probe

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/queries"
)

// claimWatcher is a pgx tracer that hands over the context each claim runs on and says when the
// driver is done with it (returned or given up).
type claimWatcher struct {
	started chan context.Context
	ended   chan error
}

type claimKey struct{}

func (w *claimWatcher) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if data.SQL != queries.SQL("Claim") {
		return ctx
	}
	w.started <- ctx
	return context.WithValue(ctx, claimKey{}, true)
}

func (w *claimWatcher) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if ctx.Value(claimKey{}) != nil {
		w.ended <- data.Err
	}
}

func TestAClaimCancelledWhileQueuedOnTheLockLeavesNoJobOpenUnchecked(t *testing.T) {
	t.Parallel()
	w := &claimWatcher{started: make(chan context.Context, 8), ended: make(chan error, 8)}
	// A driver that gives up on a query also sends the server a cancel request, on a connection
	// of its own. Whether the claim still commits is a race between that request and the lock
	// coming free; the test decides it, as it went in production, by holding new connections
	// (the cancel request's among them) until the lock was let go.
	gate, gated := make(chan struct{}), atomic.Bool{}
	pool := migrated.Pool(t, dbtest.MaxConns(8), dbtest.Tracer(w),
		dbtest.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
			if gated.Load() {
				<-gate
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}))
	defer pool.Close()
	dueServers(t, pool, 2)

	// The test holds the claim's lock on a connection of its own, so the round's first claim queues.
	locker, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer locker.Release()
	_, err = locker.Exec(t.Context(), testSQL(t, "hold_claim_lock.sql"), queries.ClaimLockKey)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	checker := &okChecker{}
	type ran struct {
		sum *Summary
		err error
	}
	done := make(chan ran, 1)
	go func() {
		sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: checker}).Run(ctx)
		done <- ran{sum, err}
	}()
	waitForLockWaiters(t, pool, 1)
	claimCtx := <-w.started

	// Ctrl-C while the claim waits for the lock.
	gated.Store(true)
	cancel()
	if claimCtx.Err() != nil {
		// The claim runs on the cancelled context: let the driver give up on it while it is still
		// queued, as it does when the lock is held longer than the cancel takes.
		require.Error(t, <-w.ended)
	}
	_, err = locker.Exec(t.Context(), testSQL(t, "release_claim_lock.sql"), queries.ClaimLockKey)
	require.NoError(t, err)
	// Taking the lock again waits for the queued claim's transaction to end, committed or not.
	_, err = locker.Exec(t.Context(), testSQL(t, "hold_claim_lock.sql"), queries.ClaimLockKey)
	require.NoError(t, err)
	_, err = locker.Exec(t.Context(), testSQL(t, "release_claim_lock.sql"), queries.ClaimLockKey)
	require.NoError(t, err)
	close(gate)
	r := <-done
	require.NotNil(t, r.sum, "the round started: %v", r.err)

	jobs, err := queries.ListRoundJobs(t.Context(), pool, r.sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, 2, "the queued claim committed once the lock was free")
	for _, j := range jobs {
		require.NotNil(t, j.RunID, "job %d (%s) was claimed and left open, unchecked, and the round did not say so "+
			"(problems %q, error %v)", j.JobID, j.Slug, r.sum.Problems, r.err)
		require.NotNil(t, j.FinishedAt, "job %d (%s) is still open", j.JobID, j.Slug)
	}
	require.Len(t, checker.checked, 2, "every claimed server is checked")
	var ie *InterruptedError
	require.ErrorAs(t, r.err, &ie, "the round was interrupted, and says so")
	require.True(t, r.sum.Interrupted)
}
