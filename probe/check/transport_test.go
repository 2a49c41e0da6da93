package check

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A directory entry may carry credentials in its URL: the run stores the URL with the user
// info and fragment gone and every query value replaced, while the server still gets the real
// one.
func TestAStoredRequestURLKeepsQueryNamesButNotTheirValues(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	target := "http://alice:pw@" + u.Host + "/mcp?token=s3cret&region=eu#frag"

	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: target, Kind: "http"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	require.Len(t, res.Requests, 1)
	assert.Equal(t, "http://"+u.Host+"/mcp?token=redacted&region=redacted", res.Requests[0].URL)
	require.Len(t, srv.Requests(), 1)
	assert.Equal(t, "s3cret", srv.Requests()[0].URL.Query().Get("token"), "only the record is redacted")
}

// net/http and the SDK quote the whole URL in their errors; the stored error must not.
func TestErrorTextDoesNotCarryTheURLsSecrets(t *testing.T) {
	t.Parallel()
	redirectsForever := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		// Each hop's query is new, so the last one, refused before it is sent, is seen only by
		// the redirect check.
		http.Redirect(w, r, "/"+strconv.Itoa(n+1)+"?hop="+strconv.Itoa(n+1)+"&token="+r.URL.Query().Get("token"), http.StatusFound)
	}))
	host := strings.TrimPrefix(redirectsForever.URL, "http://")
	cases := []struct{ name, url, kind, want string }{
		{"a redirect loop quotes the last hop's url", "http://alice:pw@" + host + "/0?token=s3cret&region=eu", "http", "stopped after 5 redirects"},
		{"a bad scheme quotes the endpoint url", "ftp://alice:pw@" + host + "/?token=s3cret", "http", "scheme must be http or https"},
		{"an unparsable url is not quoted", "http://alice:pw@" + host + "/%zz?token=s3cret", "http", "invalid URL escape"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: tc.url, Kind: tc.kind})
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Contains(t, res.Error, tc.want)
			for _, secret := range []string{"s3cret", "pw", "alice", "region=eu"} {
				assert.NotContains(t, res.Error, secret)
				for _, q := range res.Requests {
					assert.NotContains(t, q.URL, secret)
					assert.NotContains(t, q.Error, secret)
				}
			}
		})
	}
}

func TestRedactionKeepsNamesAndReplacesValues(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, raw, want string }{
		{"no query stays empty", "", ""},
		{"each value is replaced", "token=s3cret&region=eu", "token=redacted&region=redacted"},
		{"an empty value is replaced too", "token=", "token=redacted"},
		{"a bare part may be a token and is replaced whole", "s3cret&a=1", "redacted&a=redacted"},
		{"a semicolon does not split a value", "a=1;key=s3cret", "a=redacted"},
		{"empty parts are kept", "a=1&&b=2", "a=redacted&&b=redacted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, redactQuery(tc.raw))
		})
	}

	t.Run("a longer query seen is redacted whole, not by a shorter one it begins with", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{}
		for _, raw := range []string{"http://h/?a=1", "http://h/?a=1&token=s3cret"} {
			u, err := url.Parse(raw)
			require.NoError(t, err)
			rec.see(u)
		}
		assert.Equal(t, `Get "http://h/?a=redacted&token=redacted": boom`,
			rec.redact(`Get "http://h/?a=1&token=s3cret": boom`))
	})
}
