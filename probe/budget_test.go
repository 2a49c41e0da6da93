package probe

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// fakeClock is the round's clock in tests: this host's, moved on when the test says.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) add(d time.Duration) { c.offset.Add(int64(d)) }

func TestARoundClaimsNothingOnceItsTimeBudgetIsSpent(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 3)
	s := testSettings(FinishTx)
	s.Concurrency = 1
	clock := &fakeClock{}
	// The budget runs out during the first check: the invocation waits for it, then must not
	// claim the other two due servers.
	checker := &okChecker{during: func(context.Context, check.Target) { clock.add(s.MaxDuration.D()) }}
	sum, err := (&Round{DB: pool, Settings: s, Checker: checker, testKnobs: testKnobs{now: clock.now}}).Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, queries.RoundCounts{Jobs: 1, Runs: 1, Servers: 1, OK: 1, RunsUnsigned: 1}, sum.RoundCounts)
	require.Len(t, checker.checked, 1)
}

func TestACheckMayNotOutliveItsBudgetWhateverTheRoundAllows(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	s := testSettings(FinishTx)
	// The round's own context allows far more than a check may take.
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	var (
		mu       sync.Mutex
		deadline time.Time
		has      bool
		latest   time.Time
	)
	checker := &okChecker{during: func(cctx context.Context, _ check.Target) {
		mu.Lock()
		defer mu.Unlock()
		deadline, has = cctx.Deadline()
		latest = time.Now().Add(s.CheckBudget())
	}}
	_, err := (&Round{DB: pool, Settings: s, Checker: checker}).Run(ctx)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.True(t, has, "the check has a deadline")
	assert.False(t, deadline.After(latest), "the check's deadline %s is within its budget %s of its start (by %s)",
		deadline, s.CheckBudget(), latest)
}

func TestAFinishThatFindsItsJobClosedAsAbandonedSaysSo(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		t.Run(finish, func(t *testing.T) {
			t.Parallel()
			pool := testDB(t)
			dueServers(t, pool, 1)
			abandon := testSQL(t, "abandon_open_job.sql")
			// Another round closes the job as abandoned while it is being checked.
			checker := &okChecker{during: func(ctx context.Context, target check.Target) {
				tag, err := pool.Exec(ctx, abandon, target.ServerID)
				assert.NoError(t, err) // not the test goroutine: no FailNow
				assert.Equal(t, int64(1), tag.RowsAffected())
			}}
			sum, err := (&Round{DB: pool, Settings: testSettings(finish), Checker: checker}).Run(t.Context())
			require.NoError(t, err, "a guard that matched nothing is not a failure")
			require.Equal(t, 1, sum.JobsClosedElsewhere)
			require.Zero(t, sum.AdvanceMisses)
			require.Equal(t, 1, sum.Runs, "the run is stored")
			require.Zero(t, sum.OpenJobs)
		})
	}
}
