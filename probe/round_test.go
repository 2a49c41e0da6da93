package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

func dueServers(t *testing.T, db queries.DBTX, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = testfactory.Server(t.Context(), t, db, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	}
	return ids
}

func TestARoundClaimsUpToItsCapacityAndLeavesOneRunPerJob(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		t.Run(finish, func(t *testing.T) {
			t.Parallel()
			pool := testDB(t)
			dueServers(t, pool, 13)
			s := testSettings(finish)
			s.Fanout, s.ClaimLimit, s.Concurrency = 2, 4, 2 // capacity 12 of 13 due
			checker := &okChecker{}
			sum, err := (&Round{DB: pool, Settings: s, Checker: checker}).Run(t.Context())
			require.NoError(t, err)

			require.Equal(t, 3, sum.Invocations)
			require.Equal(t, queries.RoundCounts{Jobs: 12, Runs: 12, Servers: 12, OK: 12, RunsUnsigned: 12}, sum.RoundCounts)
			require.Len(t, checker.checked, 12)
			require.Empty(t, sum.Problems)
			require.False(t, sum.StoppedClaiming)
			for _, p := range sum.PerInvocation {
				require.Equal(t, 4, p.Claimed, "invocation %d", p.Invocation)
				require.Equal(t, 4, p.Done)
			}
			jobs, err := queries.ListRoundJobs(t.Context(), pool, sum.RoundID)
			require.NoError(t, err)
			for _, j := range jobs {
				require.NotNil(t, j.RunID)
				require.Nil(t, j.Envelope, "an unsigned round stores no envelope")
				s, err := queries.GetServerBySlug(t.Context(), pool, j.Slug)
				require.NoError(t, err)
				// Advanced by the interval from the time of the advance, which is the finish in tx mode.
				advancedAt := s.NextCheckAt.Add(-12 * time.Hour)
				require.False(t, advancedAt.Before(j.RequestedAt))
				require.False(t, advancedAt.After(*j.FinishedAt))
				if finish == FinishTx {
					require.Equal(t, *j.FinishedAt, advancedAt)
				}
			}
		})
	}
}

func TestAnInvocationRunsAtMostConcurrencyChecksAtOnce(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 10)
	s := testSettings(FinishTx)
	s.Fanout, s.ClaimLimit, s.Concurrency = 0, 10, 3
	// The checks hold until the test has looked: with three checks running and held, the
	// invocation has no free slot, so it must not have claimed a fourth server.
	var mu sync.Mutex
	running, most := 0, 0
	full := make(chan struct{})
	var fullOnce sync.Once // once the gate opens, three may run at once again
	gate := make(chan struct{})
	checker := &okChecker{during: func(ctx context.Context, _ check.Target) {
		mu.Lock()
		running++
		most = max(most, running)
		if running == 3 && most == 3 {
			fullOnce.Do(func() { close(full) })
		}
		mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
	}}
	var progress []Progress
	var pmu sync.Mutex
	type outcome struct {
		sum *Summary
		err error
	}
	finished := make(chan outcome, 1)
	go func() {
		sum, err := (&Round{DB: pool, Settings: s, Checker: checker, Progress: func(p Progress) {
			pmu.Lock()
			progress = append(progress, p)
			pmu.Unlock()
		}}).Run(t.Context())
		finished <- outcome{sum, err}
	}()
	select {
	case <-full:
	case o := <-finished:
		close(gate)
		t.Fatalf("the round ended (err %v) before three checks ran at once", o.err)
	case <-time.After(30 * time.Second): // a bound on a hang, not a synchronisation
		close(gate)
		t.Fatal("three checks never ran at once")
	}
	var claimed int
	require.NoError(t, pool.QueryRow(t.Context(), testSQL(t, "count_jobs.sql")).Scan(&claimed))
	close(gate)
	require.Equal(t, 3, claimed, "with every slot busy the invocation claims nothing more")

	o := <-finished
	require.NoError(t, o.err)
	sum := o.sum
	require.Equal(t, 10, sum.Jobs)
	require.LessOrEqual(t, most, 3)
	for _, p := range progress {
		require.LessOrEqual(t, p.InFlight, 3)
		require.LessOrEqual(t, p.Claimed, 10)
	}
	require.Equal(t, Progress{Invocation: 0, Claimed: 10, Done: 10}, progress[len(progress)-1])
}

func TestAnAdvanceThatMatchesNoRowFinishesTheJobAndSaysSo(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		t.Run(finish, func(t *testing.T) {
			t.Parallel()
			pool := testDB(t)
			dueServers(t, pool, 1)
			// The server is paused while it is being checked.
			checker := &okChecker{during: func(ctx context.Context, target check.Target) {
				assert.NoError(t, testfactory.SetServerStatus(ctx, pool, target.Slug, "paused")) // not the test goroutine: no FailNow
			}}
			sum, err := (&Round{DB: pool, Settings: testSettings(finish), Checker: checker}).Run(t.Context())
			require.NoError(t, err, "a guard that matched nothing is not a failure")
			require.Equal(t, 1, sum.AdvanceMisses)
			require.Equal(t, queries.RoundCounts{Jobs: 1, Runs: 1, Servers: 1, OK: 1, RunsUnsigned: 1}, sum.RoundCounts)
		})
	}
}

// failingDB makes every statement whose text is fail fail, and passes the rest to the database.
type failingDB struct {
	queries.DBTX
	fail  string
	calls int
	mu    sync.Mutex
}

func (d *failingDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sql == d.fail {
		d.mu.Lock()
		d.calls++
		d.mu.Unlock()
		return nil, errors.New("injected failure")
	}
	return d.DBTX.Query(ctx, sql, args...)
}

func TestAnAdvanceThatFailsTwiceStillFinishesTheJobAndStopsTheRoundClaiming(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 3)
	db := &failingDB{DBTX: pool, fail: queries.SQL("AdvanceServer")}
	s := testSettings(FinishAdvanceFirst)
	s.Concurrency = 1
	var logs bytes.Buffer
	sum, err := (&Round{DB: db, Settings: s, Checker: &okChecker{}, Log: slog.New(slog.NewTextHandler(&logs, nil))}).Run(t.Context())

	var inc *IncompleteError
	require.ErrorAs(t, err, &inc)
	require.Equal(t, exit.Unavailable, exit.Code(err))
	require.True(t, sum.StoppedClaiming)
	require.Equal(t, 2, db.calls, "tried once and retried once")
	require.Equal(t, queries.RoundCounts{Jobs: 1, Runs: 1, Servers: 1, OK: 1, RunsUnsigned: 1}, sum.RoundCounts,
		"the job is finished anyway and nothing more is claimed")
	require.Zero(t, sum.AdvanceMisses, "a failed advance is a problem, not a compare-and-set miss")
	require.Len(t, sum.Problems, 1)
	require.Contains(t, sum.Problems[0], "stopped claiming")
	require.Contains(t, logs.String(), "level=ERROR msg=\"advancing the next check time failed twice: finishing the job anyway and claiming no more this round\"")
	require.Contains(t, logs.String(), "err=\"advance next check of server 1: injected failure\"")
}

func TestAFinishThatFailsLeavesTheJobOpenAndTheRoundSaysSo(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		t.Run(finish, func(t *testing.T) {
			t.Parallel()
			pool := testDB(t)
			dueServers(t, pool, 1)
			// Nine requests break the promise; the database refuses to store such a run.
			nine := &okChecker{}
			checker := checkerFunc(func(ctx context.Context, target check.Target) check.Result {
				r := nine.Check(ctx, target)
				for len(r.Requests) < 9 {
					r.Requests = append(r.Requests, r.Requests[0])
				}
				return r
			})
			sum, err := (&Round{DB: pool, Settings: testSettings(finish), Checker: checker}).Run(t.Context())
			var inc *IncompleteError
			require.ErrorAs(t, err, &inc)
			require.Equal(t, 1, sum.OpenJobs)
			require.Equal(t, 0, sum.Runs)
			require.Contains(t, strings.Join(sum.Problems, "\n"), "the job stays open")
		})
	}
}

func TestASignedRoundRefusesAKeyNobodyCouldVerify(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	signer := newSigner(t, nil) // not registered
	_, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: &okChecker{}, Signer: signer}).Run(t.Context())
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	require.Equal(t, exit.Usage, exit.Code(err))
	counts, err := queries.CountRound(t.Context(), pool, 1)
	require.NoError(t, err)
	require.Zero(t, counts.Jobs, "nothing was claimed")
}

func TestASignedRoundRefusesARetiredKey(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	signer := newSigner(t, pool)
	_, err := queries.RetireSigningKey(t.Context(), pool, signer.KeyID(), nil)
	require.NoError(t, err)

	_, err = (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: &okChecker{}, Signer: signer}).Run(t.Context())

	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	require.Contains(t, ke.Msg, "was retired at")
	require.Equal(t, exit.Usage, exit.Code(err))
	counts, err := queries.CountRound(t.Context(), pool, 1)
	require.NoError(t, err)
	require.Zero(t, counts.Jobs, "nothing was claimed")
}

type checkerFunc func(ctx context.Context, t check.Target) check.Result

func (f checkerFunc) Check(ctx context.Context, t check.Target) check.Result { return f(ctx, t) }

func TestACancelledRoundRecordsTheCheckItStoppedAsInterruptedAndExits3(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 3)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	// Ctrl-C arrives during the first check; the checker reports the stopped check as the real
	// one does (outcome error, "check stopped: ...").
	checker := checkerFunc(func(cctx context.Context, target check.Target) check.Result {
		cancel(errors.New("interrupt signal received"))
		<-cctx.Done()
		now := time.Now()
		return check.Result{Outcome: check.OutcomeError, Error: "check stopped: " + context.Cause(cctx).Error(),
			StartedAt: now, FinishedAt: now}
	})
	s := testSettings(FinishTx)
	s.ClaimLimit, s.Concurrency = 3, 1
	sum, err := (&Round{DB: pool, Settings: s, Checker: checker}).Run(ctx)

	var ie *InterruptedError
	require.ErrorAs(t, err, &ie, "an interrupted round is not a round that ran: exit 3, not 0")
	require.Equal(t, exit.Unavailable, exit.Code(err))
	require.True(t, sum.Interrupted)
	require.Equal(t, []string{"the round was interrupted (interrupt signal received): it claimed no more, and 1 check(s) it " +
		"stopped midway were stored as interrupted by probectl, not as failures of the servers"}, sum.Problems)
	require.Equal(t, queries.RoundCounts{Jobs: 1, Runs: 1, Servers: 1, Errors: 1, RunsUnsigned: 1}, sum.RoundCounts,
		"the check that was made is recorded, and nothing more is claimed")
	require.False(t, sum.FinishedAt.IsZero())

	jobs, err := queries.ListRoundJobs(t.Context(), pool, sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "check interrupted by probectl (interrupt signal received), not failed by the server: "+
		"check stopped: interrupt signal received", *jobs[0].Error)
}

func TestARoundThatEndsOnItsOwnIsNotInterrupted(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	// A check that fails on its own, with the round's context alive, keeps its outcome and text.
	checker := checkerFunc(func(_ context.Context, _ check.Target) check.Result {
		now := time.Now()
		return check.Result{Outcome: check.OutcomeError, Error: "dial tcp: connection refused", StartedAt: now, FinishedAt: now}
	})
	sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: checker}).Run(t.Context())
	require.NoError(t, err)
	require.False(t, sum.Interrupted)
	jobs, err := queries.ListRoundJobs(t.Context(), pool, sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "dial tcp: connection refused", *jobs[0].Error)
}

// failingSigner is a registered key whose every signature fails.
type failingSigner struct{ Signer }

func (failingSigner) Sign(attest.Run) (json.RawMessage, error) {
	return nil, errors.New("sign run: injected failure")
}

func TestARunWhoseSigningFailsIsStoredUnsignedAndTheRoundSaysSo(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	signer := failingSigner{newSigner(t, pool)}
	sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: &okChecker{}, Signer: signer}).Run(t.Context())

	var inc *IncompleteError
	require.ErrorAs(t, err, &inc)
	require.Equal(t, exit.Unavailable, exit.Code(err))
	require.Equal(t, queries.RoundCounts{Jobs: 1, Runs: 1, Servers: 1, OK: 1, RunsUnsigned: 1}, sum.RoundCounts,
		"the run is stored, unsigned, and the job finished")
	require.Len(t, sum.Problems, 1)
	require.Contains(t, sum.Problems[0], "sign run: injected failure")
	jobs, err := queries.ListRoundJobs(t.Context(), pool, sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.NotNil(t, jobs[0].FinishedAt)
	require.NotNil(t, jobs[0].RunID)
	require.Nil(t, jobs[0].Envelope)
}

// refusedCount is a pool whose count of a round's leftovers is refused (a role that may not read
// the runs, say; a database away as the round ends is the same, after the retries).
type refusedCount struct{ queries.DB }

func (d refusedCount) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sql == queries.SQL("RoundCounts") {
		return nil, &pgconn.PgError{Code: "42501", Message: "this test refuses the count"}
	}
	return d.DB.Query(ctx, sql, args...)
}

// A round that cannot count what it left says its counts are unknown rather than zero.
func TestARoundThatCannotCountWhatItLeftSaysItsCountsAreUnknown(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 2)
	r := &Round{DB: refusedCount{pool}, Settings: testSettings(FinishTx), Checker: &okChecker{}}
	sum, err := r.Run(t.Context())
	var incomplete *IncompleteError
	require.ErrorAs(t, err, &incomplete)
	require.True(t, sum.CountsUnknown)
	require.Zero(t, sum.Jobs, "not read")
	counts, err := queries.CountRound(t.Context(), pool, sum.RoundID)
	require.NoError(t, err)
	require.Equal(t, 2, counts.Jobs)
}

// A result that is probectl's fault but not a lease's end (no decode slot was free in time) is
// stored as such and named in the problems, and not counted as fenced: on-call reading "fenced"
// would look for a paused prober that never was.
func TestAProbectlFaultThatIsNotALeaseEndIsNotCountedFenced(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	checker := checkerFunc(func(_ context.Context, _ check.Target) check.Result {
		now := time.Now()
		return check.Result{Outcome: check.OutcomeError, Summary: "could not check: decode slots busy",
			Error: "could not check: decode slots busy (waited 10s for one of 8)", Fault: check.FaultProbectl,
			StartedAt: now, FinishedAt: now}
	})
	sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: checker}).Run(t.Context())
	var inc *IncompleteError
	require.ErrorAs(t, err, &inc, "a check probectl could not make is work left undone")
	require.Zero(t, sum.Fenced)
	require.Len(t, sum.Problems, 1)
	require.Contains(t, sum.Problems[0], "decode slots busy")
	jobs, err := queries.ListRoundJobs(t.Context(), pool, sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Contains(t, *jobs[0].Error, "decode slots busy")
}
