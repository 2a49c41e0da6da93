package probe

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// A server that answers 429 with Retry-After is not checked again before the wait it asked for,
// capped at its interval. No code reads Retry-After to schedule: the finish advances the server a
// full interval from the finish, which comes after the answer. This test holds that promise
// against any change of the advance, whichever the finish mode.
func TestARateLimitedServerIsNotCheckedBeforeRetryAfterCappedAtItsInterval(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		interval   time.Duration
		retryAfter time.Duration
	}{
		{"a wait shorter than the interval", 15 * time.Minute, 10 * time.Minute},
		{"a wait longer than the interval is capped at it", 15 * time.Minute, 24 * time.Hour},
	}
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		for _, tc := range cases {
			t.Run(finish+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var answered atomic.Int64 // when the answer was sent, in Unix nanoseconds
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Retry-After", strconv.Itoa(int(tc.retryAfter.Seconds())))
					w.WriteHeader(http.StatusTooManyRequests)
					answered.Store(time.Now().UnixNano())
				}))
				t.Cleanup(srv.Close)
				pool := testDB(t)
				testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{
					Slug: "limited", URL: srv.URL, Kind: "http", Plan: "frequent", CheckInterval: tc.interval,
					NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour)),
				})
				checker := check.New(check.Config{AllowPrivate: true})
				sum, err := (&Round{DB: pool, Settings: testSettings(finish), Checker: checker}).Run(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, sum.Failed)

				jobs, err := queries.ListRoundJobs(t.Context(), pool, sum.RoundID)
				require.NoError(t, err)
				require.Len(t, jobs, 1)
				require.Equal(t, "failed", *jobs[0].Outcome)
				s, err := queries.GetServerBySlug(t.Context(), pool, "limited")
				require.NoError(t, err)
				notBefore := time.Unix(0, answered.Load()).Add(min(tc.retryAfter, tc.interval))
				require.False(t, s.NextCheckAt.Before(notBefore.Truncate(time.Microsecond)),
					"next check %s is before %s", s.NextCheckAt, notBefore)
			})
		}
	}
}
