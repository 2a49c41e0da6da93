package check

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestARateLimitedAnswerIsFailedWithRateLimitedAndTheWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		kind       string
		status     int
		retryAfter string
		summary    string
		wait       float64
	}{
		{"429 with seconds", "http", http.StatusTooManyRequests, "120", "rate_limited", 120},
		{"503 with an HTTP date", "http", http.StatusServiceUnavailable, "in an hour", "rate_limited", 3600},
		{"an MCP server's 429", "mcp", http.StatusTooManyRequests, "60", "rate_limited", 60},
		{"a wait of a year is kept at 7 days", "http", http.StatusTooManyRequests, "31536000", "rate_limited", 7 * 24 * 3600},
		{"429 without Retry-After is a plain status", "http", http.StatusTooManyRequests, "", "HTTP 429", 0},
		{"500 with Retry-After is a plain status", "http", http.StatusInternalServerError, "60", "HTTP 500", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				switch tc.retryAfter {
				case "":
				case "in an hour": // a date, written when the answer is sent
					w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
				default:
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
			}))
			res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: tc.kind})
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Contains(t, res.Summary, tc.summary)
			assert.InDelta(t, tc.wait, res.RetryAfterSeconds, 2)
			assert.Equal(t, int64(1), srv.Hits(), "a rate-limited server is not asked again")
		})
	}
}
