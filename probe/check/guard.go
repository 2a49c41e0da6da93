package check

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// RefusedError says the SSRF guard would not connect to an address. A refused check is an
// observation (outcome failed), and the server was never contacted.
type RefusedError struct {
	Host   string     // the name that was resolved ("" when the URL held an address)
	Addr   netip.Addr // the address refused
	Reason string     // e.g. "a loopback address"
	// Always: the address is refused whatever the settings (a cloud metadata endpoint, a
	// link-local address); allowing private targets would not reach it.
	Always bool
}

func (e *RefusedError) Error() string {
	rule := "private targets are not allowed"
	if e.Always {
		rule = "never allowed, even with private targets allowed"
	}
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("refused: %s resolves to %s, %s; %s", e.Host, e.Addr, e.Reason, rule)
	}
	return fmt.Sprintf("refused: %s is %s; %s", e.Addr, e.Reason, rule)
}

// policy decides whether one address may be connected to; nil means yes.
type policy func(netip.AddrPort) error

// defaultPolicy refuses every non-public address, unless allowPrivate; metadata endpoints (see
// metadataEndpoints) and link-local addresses are refused even then.
func defaultPolicy(allowPrivate bool) policy {
	return func(ap netip.AddrPort) error {
		class, what := judge(ap.Addr())
		switch {
		case class == classPublic:
			return nil
		case neverAllowed(class):
			reason := string(class)
			if what != "" {
				reason += " (" + what + ")"
			}
			return &RefusedError{Addr: ap.Addr(), Reason: reason, Always: true}
		case allowPrivate:
			return nil
		}
		return &RefusedError{Addr: ap.Addr(), Reason: string(class)}
	}
}

// guard dials only addresses its policy allows. It resolves the name itself, checks every
// address the name resolves to, and dials the checked address, so a second DNS answer cannot
// slip another address in between check and connect. The dialer's Control hook checks the
// socket's address once more, in case anything ever dials around the resolver.
type guard struct {
	allow  policy
	lookup lookupFunc
	// dial connects to an address the policy allowed: the dialer's, whose Control hook checks
	// the socket's address once more.
	dial   dialFunc
	dialer *net.Dialer
	// conns, if set, admits each connection: with keep-alives off a connection carries one
	// request, so this is where the request budget is counted at the wire.
	conns connBudget
}

// connBudget admits connections: reserve before dialling (an error means: do not dial), release
// when the dial failed and nothing reached the server.
type connBudget interface {
	reserveConn(address string) error
	releaseConn()
}

// dialFunc connects as net.Dialer.DialContext does.
type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// lookupFunc resolves a name the way net.Resolver.LookupNetIP does.
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func newGuard(allow policy, lookup lookupFunc) *guard {
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	g := &guard{allow: allow, lookup: lookup}
	g.dialer = &net.Dialer{Control: g.control} // the request's deadline bounds the dial
	g.dial = g.dialer.DialContext
	return g
}

// DialContext is the transport's dialer.
func (g *guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port", address)
	}
	addrs, err := g.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := g.allow(netip.AddrPortFrom(a, uint16(port))); err != nil {
			var refused *RefusedError
			if errors.As(err, &refused) && refused.Host == "" {
				refused.Host = host
			}
			return nil, err
		}
	}
	if g.conns != nil {
		if err := g.conns.reserveConn(address); err != nil {
			return nil, err
		}
	}
	var firstErr error
	for _, a := range addrs {
		conn, err := g.dial(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if g.conns != nil {
		g.conns.releaseConn()
	}
	return nil, firstErr
}

// resolve returns the addresses of host: the host itself when it is an address literal.
func (g *guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ipNet := "ip"
	switch network {
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	}
	addrs, err := g.lookup(ctx, ipNet, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	return addrs, nil
}

// control runs just before connect(2) with the socket's address.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused: cannot parse the address %q", address)
	}
	return g.allow(ap)
}
