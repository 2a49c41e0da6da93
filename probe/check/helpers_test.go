package check

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fleet is a loopback server that counts what reached it.
type fleet struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	seen []*http.Request
}

func newFleet(t testing.TB, h http.Handler) *fleet {
	t.Helper()
	f := &fleet{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.mu.Lock()
		f.seen = append(f.seen, r.Clone(context.Background()))
		f.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fleet) port(t *testing.T) uint16 {
	t.Helper()
	u, err := url.Parse(f.URL)
	require.NoError(t, err)
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	require.NoError(t, err)
	return uint16(p)
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }

// onlyPort stands in for "a public server" on a machine that has only loopback: it allows
// 127.0.0.1 on exactly one port and applies the real SSRF policy to everything else.
func onlyPort(port uint16) policy {
	strict := defaultPolicy(false)
	allowed := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	return func(ap netip.AddrPort) error {
		if ap == allowed {
			return nil
		}
		return strict(ap)
	}
}

func rpcs(res Result) []string {
	var out []string
	for _, r := range res.Requests {
		label := r.Method
		if r.RPC != "" {
			label += " " + r.RPC
		}
		out = append(out, label)
	}
	return out
}
