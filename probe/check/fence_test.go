package check

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A fence that is up stops every request of a check, for both kinds: the MCP SDK's
// requests go through the same per-request path as the HTTP check's.
func TestAFencedCheckSendsNoRequestAfterTheFenceGoesUp(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"http", "mcp"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := newFleet(t, http.HandlerFunc(ok))
			c := New(Config{AllowPrivate: true})
			var up atomic.Bool
			lease := errors.New("lease ended")
			ctx := WithFence(context.Background(), func() error {
				if up.Load() {
					return lease
				}
				return nil
			})
			up.Store(true)
			res := c.Check(ctx, Target{Slug: "s", URL: srv.URL + "/", Kind: kind})
			require.Zero(t, srv.Hits(), "requests at the target after the fence went up")
			require.Empty(t, res.Requests)
			require.NotEqual(t, OutcomeOK, res.Outcome)
		})
	}
}
