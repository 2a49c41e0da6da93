package check

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A redirect whose target is longer than MaxURLBytes fails the check, naming the limit; the
// target is neither followed nor quoted.
func TestARedirectToAURLLongerThan8192BytesFailsTheCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		extra    int
		followed bool
	}{
		{"a target of exactly the limit is followed", 0, true},
		{"one byte more fails the check", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var target string
			srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/next" {
					ok(w, r)
					return
				}
				http.Redirect(w, r, target, http.StatusFound)
			}))
			base := srv.URL + "/next?q="
			target = base + strings.Repeat("a", MaxURLBytes-len(base)+tc.extra)
			res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL + "/", Kind: "http"})
			if tc.followed {
				require.Equal(t, OutcomeOK, res.Outcome, res.Error)
				assert.Equal(t, int64(2), srv.Hits())
				return
			}
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Contains(t, res.Error, "longer than the 8192-byte limit")
			assert.NotContains(t, res.Error, "aaaa", "the target is not quoted")
			assert.Equal(t, int64(1), srv.Hits(), "the long target is never requested")
		})
	}
}

// Whoever builds a request (the MCP SDK follows URLs a server names), the recorder does not send
// one whose URL is over the limit.
func TestTheRecorderRefusesAnOverlongURLWithoutSendingIt(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	rec, client := New(Config{AllowPrivate: true}).newClient()
	defer client.CloseIdleConnections()
	_, err := client.Get(srv.URL + "/?q=" + strings.Repeat("a", MaxURLBytes))
	require.ErrorContains(t, err, "longer than the 8192-byte limit")
	reqs, _, problem := rec.snapshot()
	assert.Empty(t, reqs)
	assert.Error(t, problem)
	assert.Equal(t, int64(0), srv.Hits())
}

// Redaction is built once per set of secrets, not once per redaction: the replacer is kept until
// a new secret is seen.
func TestRedactionReusesItsReplacerUntilANewSecretIsSeen(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	u1 := mustURL(t, "https://a.example/?token=one")
	rec.see(u1)
	require.Equal(t, "GET https://a.example/?token=redacted", rec.redact("GET https://a.example/?token=one"))
	first := rec.replacer
	require.NotNil(t, first)
	rec.see(u1)
	rec.redact("again")
	assert.Same(t, first, rec.replacer, "seeing a known URL again keeps the replacer")
	rec.see(mustURL(t, "https://a.example/?token=two"))
	assert.Equal(t, "?token=redacted ?token=redacted", rec.redact("?token=one ?token=two"))
	assert.NotSame(t, first, rec.replacer)
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
