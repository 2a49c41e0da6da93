package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// pausingChecker is the real checker with a pause at the start of each check, before anything is
// sent: where SIGSTOP or a suspended machine would stop a prober.
type pausingChecker struct {
	real  *check.Checker
	pause func(ctx context.Context, t check.Target)
}

func (c *pausingChecker) Check(ctx context.Context, t check.Target) check.Result {
	c.pause(ctx, t)
	return c.real.Check(ctx, t)
}

// A prober paused past its job's lease (the wall clock moved 15 minutes on while Go's monotonic
// clock, like a suspended machine's, did not) must send nothing when it resumes: meanwhile
// another round took the job for abandoned and claimed the server again. Its requests are
// counted at a real loopback target, and its late finish must not move the server on.
func TestAProberPausedPastItsLeaseSendsNothingAndItsLateFinishAdvancesNothing(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		t.Run(finish, func(t *testing.T) {
			t.Parallel()
			for _, pause := range []bool{false, true} {
				hits, res, late, advanced := pausedRound(t, finish, pause)
				if !pause {
					// The control: the same round unpaused reaches the target, so the count can fail.
					require.Positive(t, hits, "the unpaused check must reach the target")
					require.Empty(t, res.Fault)
					continue
				}
				require.Zero(t, hits, "requests at the target after the lease ended")
				require.Equal(t, check.FaultProbectl, res.Fault)
				require.Equal(t, "fenced", res.Summary)
				require.Empty(t, res.Requests)
				require.True(t, late, "the run's job was taken over: its finish is late")
				require.False(t, advanced, "a late finish must not advance next_check_at")
			}
		})
	}
}

// pausedRound runs a round of one due server at a loopback target; with pause, the check is
// paused at its start while the test moves the wall clock past the lease and another round takes
// the server over. It returns the requests the target saw, the stored result, whether the run is
// late and whether next_check_at moved.
func pausedRound(t *testing.T, finish string, pause bool) (int64, check.Result, bool, bool) {
	t.Helper()
	ctx := t.Context()
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(target.Close)

	pool := testDB(t)
	claimed := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: target.URL + "/", Kind: "http", NextCheckAt: &claimed})

	// Where the server stands when the round is done, unless its finish moves it on: as the
	// claim left it, or, paused, as the other round's claim leased it.
	var untouched time.Time
	var skew atomic.Int64 // how far the wall clock moved while the prober was stopped
	s := testSettings(finish)
	r := &Round{DB: pool, Settings: s, testKnobs: testKnobs{now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())).Round(0) }}}
	r.Checker = &pausingChecker{real: check.New(check.Config{AllowPrivate: true, RequestTimeout: s.RequestTimeout.D()}),
		pause: func(ctx context.Context, _ check.Target) {
			if !pause {
				return
			}
			skew.Store(int64(queries.InFlightWindow))
			// Meanwhile another round, past the in-flight window, abandons the job and claims again.
			later := time.Now().Add(queries.InFlightWindow + time.Minute)
			other := testfactory.Round(ctx, t, pool, nil)
			_, err := queries.CloseAbandoned(ctx, pool, 0, &later) // as the other round's start does
			require.NoError(t, err)
			jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: other, Limit: 1, Now: &later})
			require.NoError(t, err)
			require.Len(t, jobs, 1, "the other round must take the server over")
			untouched = jobs[0].ClaimedNextCheckAt
		}}
	sum, err := r.Run(ctx)
	if pause {
		require.Error(t, err, "a fenced check is a problem of the round")
		require.Equal(t, 1, sum.Fenced)
	} else {
		require.NoError(t, err)
	}

	var raw []byte
	var late bool
	var next time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT r.result, r.late, s.next_check_at FROM probe_runs AS r
		JOIN servers AS s ON s.id = r.server_id WHERE r.server_id = $1`, server).Scan(&raw, &late, &next))
	var res check.Result
	require.NoError(t, json.Unmarshal(raw, &res))
	return hits.Load(), res, late, !next.Equal(untouched)
}
