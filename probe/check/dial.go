package check

import (
	"context"
	"net"
)

// GuardedDialContext is the SSRF guard as a dialer, for probectl's other outbound requests (the
// MCP registry a sync reads): it resolves the name itself and dials only addresses a check could
// reach: loopback and private ones only when allowPrivate; link-local ones and metadata endpoints
// never, allowPrivate or not.
// A refusal is a *RefusedError, returned before any connection is attempted.
func GuardedDialContext(allowPrivate bool) func(ctx context.Context, network, address string) (net.Conn, error) {
	return newGuard(defaultPolicy(allowPrivate), nil).DialContext
}
