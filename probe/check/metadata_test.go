package check

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingDialer stands in for the guard's dialer in tests that must never connect: it records
// each address it is asked for and connects to none. An address the guard judges before the dial
// never reaches it.
type recordingDialer struct {
	mu    sync.Mutex
	asked []string
}

var errNotDialled = errors.New("the test's recording dialer connects to nothing")

func (d *recordingDialer) dial(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, address)
	return nil, errNotDialled
}

func (d *recordingDialer) addresses() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

// neverDialling is a checker whose dialer records and connects to nothing, and whose resolver
// answers every name with addr.
func neverDialling(allowPrivate bool, addr netip.Addr) (*Checker, *recordingDialer) {
	d := &recordingDialer{}
	c := New(Config{AllowPrivate: allowPrivate})
	c.dial = d.dial
	c.lookup = func(context.Context, string, string) ([]netip.Addr, error) { return []netip.Addr{addr}, nil }
	return c, d
}

// carrying lists a refused IPv4 address under every IPv6 form that carries it and that the guard
// unwraps: IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96), local-use NAT64 (64:ff9b:1::/48
// at /96) and 6to4. An IPv6 address is itself only.
func carrying(a netip.Addr) map[string]netip.Addr {
	forms := map[string]netip.Addr{"itself": a}
	if !a.Is4() {
		return forms
	}
	v4 := a.As4()
	with := func(prefix string, at int) netip.Addr {
		b := netip.MustParseAddr(prefix).As16()
		copy(b[at:at+4], v4[:])
		return netip.AddrFrom16(b)
	}
	forms["IPv4-mapped"] = netip.AddrFrom16(a.As16())
	forms["IPv4-compatible"] = with("::", 12)
	forms["NAT64"] = with("64:ff9b::", 12)
	forms["local-use NAT64"] = with("64:ff9b:1::", 12)
	forms["6to4"] = with("2002::1", 2)
	return forms
}

func urlFor(a netip.Addr) string {
	if a.Is4() {
		return "http://" + a.String() + "/latest/meta-data/"
	}
	return "http://[" + strings.ReplaceAll(a.String(), "%", "%25") + "]/latest/meta-data/"
}

// Every endpoint of the metadata table, in every form that carries it, is refused with and
// without private targets allowed, by address and by a name that resolves to it; the check says
// it is never allowed, and the dialer is never asked. The dry run's judge (Refusal) says the same.
func TestEveryMetadataEndpointIsRefusedBeforeTheDialWhateverTheSettings(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, metadataEndpoints)
	for _, e := range metadataEndpoints {
		for form, addr := range carrying(e.Addr) {
			for _, allowPrivate := range []bool{false, true} {
				name := fmt.Sprintf("%s (%s) as %s, private targets allowed %v", e.Addr, e.What, form, allowPrivate)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					assertNeverReached(t, allowPrivate, addr, "a cloud metadata address ("+e.What+")")
				})
			}
		}
	}
}

// All of 169.254.0.0/16 and fe80::/10 are refused even with private targets allowed, named or not
// in the table.
func TestEveryLinkLocalAddressIsRefusedWhateverTheSettings(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"169.254.0.1", "169.254.1.1", "169.254.255.254", "fe80::1", "fe80::a9fe:a9fe", "febf:ffff::1"} {
		for form, addr := range carrying(netip.MustParseAddr(raw)) {
			for _, allowPrivate := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s as %s, private targets allowed %v", raw, form, allowPrivate), func(t *testing.T) {
					t.Parallel()
					assertNeverReached(t, allowPrivate, addr, "a link-local address")
				})
			}
		}
	}
	t.Run("a zoned link-local address", func(t *testing.T) {
		t.Parallel()
		assertNeverReached(t, true, netip.MustParseAddr("fe80::1%eth0"), "a link-local address")
	})
}

func assertNeverReached(t *testing.T, allowPrivate bool, addr netip.Addr, why string) {
	t.Helper()
	for _, target := range []string{urlFor(addr), "http://metadata.test/latest/meta-data/"} {
		c, d := neverDialling(allowPrivate, addr)
		res := c.Check(context.Background(), Target{URL: target, Kind: "http"})
		assert.Equal(t, OutcomeFailed, res.Outcome, target)
		assert.Equal(t, "refused by the SSRF guard", res.Summary, target)
		assert.Contains(t, res.Error, why, target)
		assert.Contains(t, res.Error, "never allowed, even with private targets allowed", target)
		assert.Empty(t, d.addresses(), "%s: the dialer was never asked", target)

		r := c.Refusal(context.Background(), target)
		if assert.NotNil(t, r, "%s: the dry run flags it", target) {
			assert.True(t, r.Always, target)
			assert.Contains(t, r.Error(), why, target)
		}
		assert.Empty(t, d.addresses(), "%s: the dry run dials nothing", target)
	}
}

// The recording dialer does see what the guard lets through: a private address under
// AllowPrivate, and a public one, reach it (and go no further). Without this, an empty record
// would prove nothing.
func TestTheRecordingDialerSeesWhatTheGuardAllows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr         string
		allowPrivate bool
	}{{"10.1.2.3", true}, {"fd12:3456::1", true}, {"100.100.100.199", true}, {"93.184.215.14", false}} {
		c, d := neverDialling(tc.allowPrivate, netip.MustParseAddr(tc.addr))
		res := c.Check(context.Background(), Target{URL: "http://allowed.test/", Kind: "http"})
		assert.Contains(t, res.Error, errNotDialled.Error(), tc.addr)
		assert.Equal(t, []string{netip.AddrPortFrom(netip.MustParseAddr(tc.addr), 80).String()}, d.addresses(), tc.addr)
	}
}

// Each endpoint is listed once, with a source.
func TestTheMetadataTableNamesASourceForEachEndpoint(t *testing.T) {
	t.Parallel()
	seen := map[netip.Addr]bool{}
	for _, e := range MetadataEndpoints() {
		assert.False(t, seen[e.Addr], "%s listed twice", e.Addr)
		seen[e.Addr] = true
		assert.NotEmpty(t, e.What, e.Addr)
		assert.NotEmpty(t, e.Source, e.Addr)
		assert.Equal(t, classMetadata, classify(e.Addr), e.Addr)
	}
}
