package probe

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

func TestTheLeaseCheckCountsTheFinishInAJobsWorstCase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                        string
		requestTimeout, maxDuration time.Duration
		want                        string // "" when the settings fit
	}{
		{"the defaults fit with room to spare", 10 * time.Second, 4 * time.Minute, ""},
		{"a check, the round and the finish that fill the window exactly fit", 90 * time.Second, 2*time.Minute + 30*time.Second, ""},
		{"a check and the round that fit only without the finish do not fit", 90 * time.Second, 2*time.Minute + 45*time.Second,
			"lease: 8 requests × request_timeout 1m30s + max_duration 2m45s + finish 30s = 15m15s does not fit the 15m0s " +
				"in-flight window; lower request_timeout or max_duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := settings.Default()
			s.RequestTimeout, s.MaxDuration = settings.Duration(tc.requestTimeout), settings.Duration(tc.maxDuration)
			err := s.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestAnAdvanceThatTimesOutLeavesTimeForItsRetryAndTheFinish(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	dueServers(t, pool, 1)
	s := testSettings(FinishAdvanceFirst)
	s.ClaimLimit = 1
	var advances atomic.Int32
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{}, finishBudget: 3 * time.Second,
		hooks: hooks{beforeWrite: func(ctx context.Context, w write) {
			if w == writeAdvance && advances.Add(1) == 1 {
				<-ctx.Done() // the first advance hangs until its timeout
			}
		}}}
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

func TestTheLeaseCheckRefusesATimeoutThatWouldWrapAround(t *testing.T) {
	t.Parallel()
	s := settings.Default()
	// 8 × 2^61 ns is 2^64 ns: wrapped, the worst case would look like the round's budget alone.
	s.RequestTimeout = 2305843009213693952
	require.ErrorContains(t, s.Validate(), "does not fit the 15m0s in-flight window")
	require.Equal(t, time.Duration(math.MaxInt64), s.JobWorstCase())
}

func TestASettingsErrorNamesTheSettingAndLetsTheCallerSayItsFlag(t *testing.T) {
	t.Parallel()
	s := settings.Default()
	s.ClaimLimit, s.RequestTimeout, s.MaxDuration = 0, settings.Duration(time.Minute), settings.Duration(10*time.Minute)
	err := s.Validate()
	require.EqualError(t, err, "claim_limit: must be at least 1, got 0\n"+
		"lease: 8 requests × request_timeout 1m0s + max_duration 10m0s + finish 30s = 18m30s does not fit the 15m0s "+
		"in-flight window; lower request_timeout or max_duration")
	var bad *settings.Error
	require.ErrorAs(t, err, &bad)
	require.Equal(t, settings.ClaimLimit, bad.Setting)
	require.Equal(t, exit.Usage, exit.Code(err))
	flag := func(s settings.Setting) string { return "--" + strings.ReplaceAll(string(s), "_", "-") }
	require.Equal(t, "--claim-limit: must be at least 1, got 0", bad.Say(flag))
	lease := err.(interface{ Unwrap() []error }).Unwrap()[1].(*settings.Error)
	require.Equal(t, "lease: 8 requests × --request-timeout 1m0s + --max-duration 10m0s + finish 30s = 18m30s does not fit "+
		"the 15m0s in-flight window; lower --request-timeout or --max-duration", lease.Say(flag))
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
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{}, finishBudget: 3 * time.Second,
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
		}}}
	_, err := r.Run(t.Context())
	require.NoError(t, err)
	require.False(t, retriedAt.IsZero(), "the advance was retried")
	require.GreaterOrEqual(t, retriedAt.Sub(failedAt), retryFirstWait, "the retry waited")
}
