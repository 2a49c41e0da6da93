package check

import (
	"context"
	"net"
)

// ReceiverDialContext is the dialer of alert deliveries (internal/alerts): the guard's rules with
// private and loopback addresses allowed, since an Alertmanager or a webhook relay usually lives
// on an internal network, and cloud metadata endpoints refused always, judged after DNS
// resolution and on the socket's address, as for checks.
func ReceiverDialContext() func(ctx context.Context, network, address string) (net.Conn, error) {
	return newGuard(defaultPolicy(true), nil).DialContext
}
