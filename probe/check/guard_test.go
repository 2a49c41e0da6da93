package check

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SSRF guard: a loopback target is refused without AllowPrivate, and the server never sees a
// request; with AllowPrivate the same target is reached.
func TestALoopbackTargetIsRefusedUnlessPrivateTargetsAreAllowed(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"http", "mcp"} {
		t.Run(kind+" target", func(t *testing.T) {
			t.Parallel()
			srv := newFleet(t, http.HandlerFunc(ok))
			target := Target{Slug: "local", URL: srv.URL, Kind: kind}

			res := New(Config{}).Check(context.Background(), target)
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Contains(t, res.Error, "refused: 127.0.0.1 is a loopback address")
			assert.Equal(t, "refused by the SSRF guard", res.Summary)
			assert.Zero(t, srv.Hits(), "the server saw no request")
			require.Len(t, res.Requests, 1, "the refused attempt is recorded")
			assert.Contains(t, res.Requests[0].Error, "refused")
			assert.Zero(t, res.Requests[0].Status)
		})
	}
	t.Run("http target with private targets allowed", func(t *testing.T) {
		t.Parallel()
		srv := newFleet(t, http.HandlerFunc(ok))
		res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
		assert.Equal(t, OutcomeOK, res.Outcome, res.Error)
		assert.Equal(t, int64(1), srv.Hits())
	})
}

func TestAnIPv4MappedLoopbackTargetIsRefused(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	mapped := strings.Replace(srv.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1)
	res := New(Config{}).Check(context.Background(), Target{URL: mapped, Kind: "http"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Error, "is a loopback address")
	assert.Zero(t, srv.Hits())
}

// The SSRF guard on redirects: a redirect from an allowed target to a refused one is refused, and with the guard
// switched off (the seam) the very same redirect is followed — so the test can fail.
func TestARedirectFromAnAllowedTargetToALoopbackOneIsRefused(t *testing.T) {
	t.Parallel()
	refused := newFleet(t, http.HandlerFunc(ok))
	allowed := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, refused.URL+"/secret", http.StatusFound)
	}))

	c := New(Config{})
	c.allow = onlyPort(allowed.Port(t))
	res := c.Check(context.Background(), Target{URL: allowed.URL, Kind: "http"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Error, "refused: 127.0.0.1 is a loopback address")
	assert.Equal(t, int64(1), allowed.Hits(), "the allowed server was asked once")
	assert.Zero(t, refused.Hits(), "the redirect target saw nothing")
	require.Len(t, res.Requests, 2)
	assert.Equal(t, http.StatusFound, res.Requests[0].Status)
	assert.Contains(t, res.Requests[1].URL, "/secret")

	t.Run("with the guard off the same redirect is followed", func(t *testing.T) {
		c := New(Config{AllowPrivate: true})
		res := c.Check(context.Background(), Target{URL: allowed.URL, Kind: "http"})
		assert.Equal(t, OutcomeOK, res.Outcome)
		assert.Equal(t, int64(1), refused.Hits())
	})
}

func TestARedirectToAnotherSchemeIsRefused(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	}))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Error, `refused redirect to scheme "file"`)
	assert.Len(t, res.Requests, 1)
}

// A name is resolved once, every address it resolves to is checked, and the checked address
// is the one dialled: a second, different DNS answer is never asked for.
func TestANameIsResolvedOnceAndEveryAddressIsChecked(t *testing.T) {
	t.Parallel()
	t.Run("a name with one refused address among its answers is refused", func(t *testing.T) {
		t.Parallel()
		srv := newFleet(t, http.HandlerFunc(ok))
		port := srv.Port(t)
		c := New(Config{})
		c.allow = onlyPort(port)
		c.lookup = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.1")}, nil
		}
		res := c.Check(context.Background(), Target{URL: "http://probe.test:" + itoa(port) + "/", Kind: "http"})
		assert.Equal(t, OutcomeFailed, res.Outcome)
		assert.Contains(t, res.Error, "refused: probe.test resolves to 10.0.0.1, a private address")
		assert.Zero(t, srv.Hits())
	})
	t.Run("the checked address is dialled without resolving again", func(t *testing.T) {
		t.Parallel()
		srv := newFleet(t, http.HandlerFunc(ok))
		port := srv.Port(t)
		var lookups atomic.Int64
		c := New(Config{})
		c.allow = onlyPort(port)
		c.lookup = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
			if lookups.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil // a rebinding answer
		}
		res := c.Check(context.Background(), Target{URL: "http://probe.test:" + itoa(port) + "/", Kind: "http"})
		assert.Equal(t, OutcomeOK, res.Outcome, res.Error)
		assert.Equal(t, int64(1), lookups.Load())
		assert.Equal(t, int64(1), srv.Hits())
	})
}

// The transport never takes a proxy from the environment: a proxy would dial for us, around
// the guard. net/http reads the proxy variables once per process, before any test could set
// them, so the check runs in a child process (this test binary again) started with them set,
// and a loopback proxy in this process counts the connections that reach it. The proxy answers
// 200 to anything, so a proxied check would still be ok: only the count can tell.
func TestAProxyInTheEnvironmentIsIgnored(t *testing.T) {
	if target := os.Getenv(proxyChildEnv); target != "" {
		checkInTheProxiedChild(t, target)
		return
	}
	t.Parallel()
	var proxyConns atomic.Int64
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(ok))
	proxy.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			proxyConns.Add(1)
		}
	}
	proxy.Start()
	t.Cleanup(proxy.Close)
	target := newFleet(t, http.HandlerFunc(ok))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAProxyInTheEnvironmentIsIgnored$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.Contains(strings.ToLower(name), "proxy") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		proxyChildEnv+"=http://probe.test:"+itoa(target.Port(t))+"/",
		"HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL,
		"HTTPS_PROXY="+proxy.URL, "https_proxy="+proxy.URL,
	)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child's check:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestAProxyInTheEnvironmentIsIgnored", "the child ran the check")
	assert.Zero(t, proxyConns.Load(), "the proxy was never connected to")
	assert.Equal(t, int64(1), target.Hits(), "the target was reached directly")
}

// proxyChildEnv carries the target URL to the child process of TestAProxyInTheEnvironmentIsIgnored.
const proxyChildEnv = "PROBECTL_CHECK_PROXY_CHILD_TARGET"

func checkInTheProxiedChild(t *testing.T, target string) {
	req, err := http.NewRequest(http.MethodGet, target, nil)
	require.NoError(t, err)
	proxyURL, err := http.ProxyFromEnvironment(req)
	require.NoError(t, err)
	require.NotNil(t, proxyURL, "the environment names a proxy for this target, were it consulted")

	c := New(Config{AllowPrivate: true})
	// Go never proxies 127.0.0.1 itself, hence a name, which this resolver answers.
	c.lookup = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	res := c.Check(context.Background(), Target{URL: target, Kind: "http"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
}

// The same guard seen from inside: the check's transport has no proxy function at all.
func TestTheCheckTransportHasNoProxy(t *testing.T) {
	t.Parallel()
	rec, client := New(Config{}).newClient()
	defer client.CloseIdleConnections()
	tr, isTransport := rec.base.(*http.Transport)
	require.True(t, isTransport, "the recorder wraps an *http.Transport")
	assert.Nil(t, tr.Proxy)
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }

// The dialer's Control hook is the second line: whatever dials, the socket's own address is
// checked just before connect. The seam is a policy that admits an address the first time it is
// asked and refuses it from then on, as if the policy had changed between the guard's check and
// the connect: the check goes through the transport's real dialer, and only a second look, at
// the socket, can refuse it.
func TestTheSocketAddressIsCheckedAgainBeforeConnect(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	var mu sync.Mutex
	var asked []netip.AddrPort
	c := New(Config{})
	c.allow = func(ap netip.AddrPort) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, ap)
		if len(asked) == 1 {
			return nil
		}
		return &RefusedError{Addr: ap.Addr(), Reason: "refused on a second look"}
	}
	res := c.Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
	assert.Equal(t, OutcomeFailed, res.Outcome, res.Error)
	assert.Equal(t, "refused by the SSRF guard", res.Summary)
	assert.Contains(t, res.Error, "refused on a second look")
	assert.Zero(t, srv.Hits(), "the server saw no request")
	want := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), srv.Port(t))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []netip.AddrPort{want, want}, asked, "checked before dialling, then at the socket")
}

// The hook judges the socket's address with the same policy, IPv4-mapped forms included.
func TestTheControlHookAppliesThePolicyToTheSocketAddress(t *testing.T) {
	t.Parallel()
	g := newGuard(defaultPolicy(false), nil)
	assert.ErrorContains(t, g.control("tcp4", "127.0.0.1:80", nil), "refused: 127.0.0.1 is a loopback address")
	assert.ErrorContains(t, g.control("tcp6", "[::ffff:10.0.0.1]:80", nil), "a private address")
	assert.NoError(t, g.control("tcp4", "8.8.8.8:443", nil), "only checked, never dialled")
}
