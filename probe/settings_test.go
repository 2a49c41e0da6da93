package probe

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

func TestAnAdvanceThatTimesOutLeavesTimeForItsRetryAndTheFinish(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	s := testSettings(FinishAdvanceFirst)
	s.ClaimLimit = 1
	var advances atomic.Int32
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{}, testKnobs: testKnobs{finishBudget: 3 * time.Second,
		hooks: hooks{beforeWrite: func(ctx context.Context, w write) {
			if w == writeAdvance && advances.Add(1) == 1 {
				<-ctx.Done() // the first advance hangs until its timeout
			}
		}}}}
	sum, err := r.Run(t.Context())
	require.NoError(t, err, "the retry and the finish had time of their own")
	require.Equal(t, int32(2), advances.Load(), "the advance was retried")
	require.Equal(t, queries.RoundCounts{Jobs: 1, Runs: 1, Servers: 1, OK: 1, RunsUnsigned: 1}, sum.RoundCounts)
	require.False(t, sum.StoppedClaiming)
	require.Zero(t, sum.AdvanceMisses)
}

func TestTheCheckerIsConfiguredAsTheRoundRecords(t *testing.T) {
	t.Parallel()
	s := settings.Default()
	s.RequestTimeout, s.MaxBodyBytes, s.AllowPrivateTargets = settings.Duration(7*time.Second), 4096, true
	s.Version, s.Contact = "v1.2.0", "https://probe.example/about"
	require.Equal(t, check.Config{RequestTimeout: 7 * time.Second, MaxBodyBytes: 4096, AllowPrivate: true,
		UserAgent: "probectl/v1.2.0 (+https://probe.example/about)"}, CheckConfig(s))
}

// The advance's retry waits first (the backoff every retried write has), inside the finish's
// budget: it used to go out the instant the first attempt failed.
func TestAnAdvanceIsRetriedAfterABackoff(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	s := testSettings(FinishAdvanceFirst)
	s.ClaimLimit = 1
	var mu sync.Mutex
	var failedAt, retriedAt time.Time
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{}, testKnobs: testKnobs{finishBudget: 3 * time.Second,
		hooks: hooks{beforeWrite: func(ctx context.Context, w write) {
			if w != writeAdvance {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if failedAt.IsZero() {
				<-ctx.Done() // the first advance hangs until its timeout, and fails
				failedAt = time.Now()
				return
			}
			retriedAt = time.Now()
		}}}}
	_, err := r.Run(t.Context())
	require.NoError(t, err)
	require.False(t, retriedAt.IsZero(), "the advance was retried")
	require.GreaterOrEqual(t, retriedAt.Sub(failedAt), queries.RetryFirstWait, "the retry waited")
}
