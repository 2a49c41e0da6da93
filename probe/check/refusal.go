package check

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strconv"
)

// Refusal says whether the SSRF guard would refuse to check rawURL now: it resolves the host as a
// check does (an address literal is not resolved) and judges every address by this checker's
// policy. nil: allowed, or not decidable now (a URL that does not parse, a name that does not
// resolve: the check itself will say). It sends nothing to the server; `run round --dry-run`
// uses it to say which due servers a round would be refused.
func (c *Checker) Refusal(ctx context.Context, rawURL string) *RefusedError {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port := uint64(443)
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.ParseUint(p, 10, 16); err != nil {
			return nil
		}
	}
	host := u.Hostname()
	addrs, err := newGuard(c.allow, c.lookup).resolve(ctx, "tcp", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		err := c.allow(netip.AddrPortFrom(a, uint16(port)))
		var refused *RefusedError
		if errors.As(err, &refused) {
			if refused.Host == "" && host != a.String() {
				refused.Host = host
			}
			return refused
		}
	}
	return nil
}

// RefusedLiteral says whether the guard, allowing private targets or not, refuses the address a
// URL's host is written as (no name is resolved: nothing is looked up or sent); nil for a name, a
// URL that does not parse, or an address allowed. A receiver's URL is judged so when it is added:
// one that names a metadata endpoint could never be delivered to.
func RefusedLiteral(rawURL string, allowPrivate bool) *RefusedError {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	var refused *RefusedError
	if errors.As(defaultPolicy(allowPrivate)(netip.AddrPortFrom(a, 0)), &refused) {
		return refused
	}
	return nil
}
