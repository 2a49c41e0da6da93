package check

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/probectl/probectl/internal/fakefleet"
)

// fleet is the tests' shared fake fleet: a loopback server that records what reached it.
type fleet = fakefleet.Fleet

func newFleet(t testing.TB, h http.Handler) *fleet { return fakefleet.New(t, h) }

var ok = fakefleet.OK

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
