package check

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTTPChecksSortAnswersIntoOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		outcome  string
		requests int
		summary  string
	}{
		{"a 200 is ok", ok, OutcomeOK, 1, "HTTP 200"},
		{"a 204 is ok", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, OutcomeOK, 1, "HTTP 204"},
		{"a redirect followed to a 200 is ok", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/health", http.StatusMovedPermanently)
				return
			}
			ok(w, r)
		}, OutcomeOK, 2, "HTTP 200"},
		{"a 404 is failed", http.NotFound, OutcomeFailed, 1, "HTTP 404"},
		{"a 500 is failed", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, OutcomeFailed, 1, "HTTP 500"},
		{"a 304 that is not a redirect is failed", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) }, OutcomeFailed, 1, "HTTP 304"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFleet(t, tc.handler)
			res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL + "/", Kind: "http"})
			assert.Equal(t, tc.outcome, res.Outcome, res.Error)
			assert.Len(t, res.Requests, tc.requests)
			assert.Equal(t, tc.summary, res.Summary)
			assert.Equal(t, int64(tc.requests), srv.Hits())
		})
	}
}

func TestAServerThatRedirectsForeverIsStoppedWithinTheBudget(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		http.Redirect(w, r, "/"+strconv.Itoa(n+1), http.StatusFound)
	}))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL + "/0", Kind: "http"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Error, "stopped after 5 redirects")
	assert.Len(t, res.Requests, MaxRedirects+1)
	assert.Equal(t, int64(MaxRedirects+1), srv.Hits())
}

// The budget itself, below the redirect limit: a client that would follow ten redirects still
// sends only MaxRequests, and the ninth is refused without being sent.
func TestTheNinthRequestIsRefusedAndNeverSent(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		http.Redirect(w, r, "/"+strconv.Itoa(n+1), http.StatusFound)
	}))
	c := New(Config{AllowPrivate: true})
	rec, client := c.newClient()
	client.CheckRedirect = nil // Go's default: follow up to 10
	defer client.CloseIdleConnections()

	_, err := client.Get(srv.URL + "/0")
	var budget *BudgetError
	require.ErrorAs(t, err, &budget)
	assert.Contains(t, err.Error(), "request budget of 8 per check spent")
	reqs, overflow, problem := rec.snapshot()
	assert.Len(t, reqs, MaxRequests)
	assert.Equal(t, 1, overflow)
	assert.ErrorAs(t, problem, &budget)
	assert.Equal(t, int64(MaxRequests), srv.Hits(), "the server saw exactly the budget")
	assert.Equal(t, outcomeOf(err), OutcomeFailed)
}

func TestAnOversizedBodyIsCutAndFailsTheCheck(t *testing.T) {
	t.Parallel()
	const limit = 1024
	cases := []struct {
		name    string
		size    int
		chunked bool
		outcome string
	}{
		{"a body of exactly the cap is ok", limit, true, OutcomeOK},
		{"a streamed body past the cap is failed", 50 * limit, true, OutcomeFailed},
		{"a body whose length says it is past the cap is failed unread", 50 * limit, false, OutcomeFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(tc.size))
				}
				w.WriteHeader(http.StatusOK)
				for range tc.size / 512 {
					_, _ = w.Write(make([]byte, 512))
					if tc.chunked {
						w.(http.Flusher).Flush()
					}
				}
			}))
			res := New(Config{AllowPrivate: true, MaxBodyBytes: limit}).Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
			assert.Equal(t, tc.outcome, res.Outcome, res.Error)
			require.Len(t, res.Requests, 1)
			assert.LessOrEqual(t, res.Requests[0].Bytes, int64(limit+1), "reading stopped at the cap")
			if tc.outcome == OutcomeFailed {
				assert.Contains(t, res.Error, "larger than the 1024-byte cap")
				assert.Equal(t, "response too large", res.Summary)
			} else {
				assert.Equal(t, int64(limit), res.Requests[0].Bytes)
			}
			if !tc.chunked {
				assert.Zero(t, res.Requests[0].Bytes, "a length past the cap is refused before the body is read")
			}
		})
	}
}

func TestACheckIsBoundedByEveryRequestItMayMakeAtTheRequestTimeout(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	// The caller allows far more than a check may take.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	const timeout = 2 * time.Second
	c := New(Config{AllowPrivate: true, RequestTimeout: timeout})
	var deadline time.Time
	var has bool
	c.started = func(ctx context.Context) { deadline, has = ctx.Deadline() }
	before := time.Now()
	res := c.Check(ctx, Target{URL: srv.URL, Kind: "http"})
	after := time.Now()
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	require.True(t, has, "the check has a deadline")
	budget := time.Duration(MaxRequests) * timeout
	assert.False(t, deadline.Before(before.Add(budget)), "deadline %s, budget %s from %s", deadline, budget, before)
	assert.False(t, deadline.After(after.Add(budget)), "deadline %s, budget %s from %s", deadline, budget, after)
}

// A server that never answers (or stops halfway through its body) is an error, after the
// per-request timeout. The handlers block on the request's context, not on a sleep.
func TestASlowServerTimesOutAsAnError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"no headers in time", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{"a body that stalls", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFleet(t, tc.handler)
			res := New(Config{AllowPrivate: true, RequestTimeout: 150 * time.Millisecond}).
				Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
			assert.Equal(t, OutcomeError, res.Outcome)
			assert.Contains(t, res.Error, "timed out after 150ms")
			assert.Equal(t, "timed out", res.Summary)
			require.Len(t, res.Requests, 1)
			assert.Contains(t, res.Requests[0].Error, "timed out")
		})
	}
}

func TestTLSCertificateDetailsAreRecorded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(ok))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	c := New(Config{AllowPrivate: true})
	c.rootCAs = pool
	res := c.Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	require.Len(t, res.Requests, 1)
	tls := res.Requests[0].TLS
	require.NotNil(t, tls)
	assert.Equal(t, "TLS 1.3", tls.Version)
	assert.Equal(t, srv.Certificate().Subject.String(), tls.Subject)
	assert.Equal(t, srv.Certificate().Issuer.String(), tls.Issuer)
	assert.True(t, srv.Certificate().NotAfter.Equal(tls.CertNotAfter))

	t.Run("a certificate nobody vouches for fails the check", func(t *testing.T) {
		res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
		assert.Equal(t, OutcomeFailed, res.Outcome)
		assert.Contains(t, res.Error, "certificate")
	})
}

func TestTargetsThatCannotBeCheckedAreFailedWithoutARequest(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, url, kind, want string }{
		{"an unknown kind is failed", "http://127.0.0.1:1/", "ftp", `unknown check kind "ftp"`},
		{"a url without a scheme is failed", "example.test/mcp", "mcp", "scheme must be http or https"},
		{"a file url is failed", "file:///etc/passwd", "http", "scheme must be http or https"},
		{"a url without a host is failed", "http:///path", "http", "no host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := New(Config{}).Check(context.Background(), Target{URL: tc.url, Kind: tc.kind})
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Contains(t, res.Error, tc.want)
			assert.Empty(t, res.Requests)
			assert.NotNil(t, res.Requests, "requests is [] in JSON, never null")
		})
	}
}

func TestAConnectionRefusedIsAnError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(ok))
	url := srv.URL
	srv.Close() // nothing listens there now
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: url, Kind: "http"})
	assert.Equal(t, OutcomeError, res.Outcome)
	assert.Contains(t, res.Error, "connection refused")
}

func TestResultJSONHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
	data, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	for _, k := range []string{"outcome", "summary", "requests", "started_at", "finished_at"} {
		assert.Contains(t, m, k)
	}
	req := m["requests"].([]any)[0].(map[string]any)
	for _, k := range []string{"method", "url", "status", "latency_seconds", "bytes", "started_at"} {
		assert.Contains(t, req, k)
	}
	assert.True(t, strings.HasSuffix(req["started_at"].(string), "Z"), "times are UTC")
}

func TestAnErrorTheServerWroteIsClipped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000)
	assert.LessOrEqual(t, len(clip(long, maxErrorLen)), maxErrorLen+len("…"))
	assert.True(t, utf8.ValidString(clip(long, maxErrorLen)))
	assert.Equal(t, "short", clip("short", maxErrorLen))
}

// Each check has its own connections and closes them when it ends: a round of hundreds of
// servers must not hold hundreds of sockets open until they time out.
func TestACheckLeavesNoConnectionOpen(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"http", "mcp"} {
		t.Run("a "+kind+" check", func(t *testing.T) {
			t.Parallel()
			var open atomic.Int64
			var h http.Handler = http.HandlerFunc(ok)
			if kind == "mcp" {
				h = mcpFleet(t, "conns", 1, nil).Config.Handler
			}
			srv := httptest.NewUnstartedServer(h)
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				switch st {
				case http.StateNew:
					open.Add(1)
				case http.StateClosed, http.StateHijacked:
					open.Add(-1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: kind})
			require.Equal(t, OutcomeOK, res.Outcome, res.Error)
			// The server learns of the close asynchronously; wait for it, bounded.
			require.Eventually(t, func() bool { return open.Load() == 0 }, 5*time.Second, 5*time.Millisecond)
		})
	}
}
