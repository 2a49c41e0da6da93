package check

import (
	"context"
	"net/http"
)

// FaultProbectl is Result.Fault for a result that says nothing about the server: the check was
// interrupted, fenced or late, by probectl's doing.
const FaultProbectl = "probectl"

type fenceKey struct{}

// WithFence returns a context whose checks ask fence before each request they send: when it
// returns an error, the request is not sent and fails with that error. A prober fences its checks
// with the job's lease, so that no request leaves after the lease has ended, whatever the clocks
// did meanwhile (a context's deadline runs on the monotonic clock, which stops while a machine is
// suspended; the fence can read the wall clock too).
func WithFence(ctx context.Context, fence func() error) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// fenced is the fence's answer for a request's context; nil when there is no fence.
func fenced(ctx context.Context) error {
	if fence, ok := ctx.Value(fenceKey{}).(func() error); ok && fence != nil {
		return fence()
	}
	return nil
}

// refuseFenced closes req's body and returns the fence's error when the fence is up.
func refuseFenced(req *http.Request) error {
	err := fenced(req.Context())
	if err != nil && req.Body != nil {
		_ = req.Body.Close()
	}
	return err
}
