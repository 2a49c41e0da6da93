package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// statusError is an answer with a status that is not 2xx (after redirects).
type statusError struct{ code int }

func (e *statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
}

// checkHTTP makes one GET (following up to MaxRedirects redirects) and reads the body under the
// size cap: a 2xx answer is ok.
func (c *Checker) checkHTTP(ctx context.Context, client *http.Client, t Target) (Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return Result{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "*/*")
	resp, err := client.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return Result{}, fmt.Errorf("read body: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{Summary: fmt.Sprintf("HTTP %d", resp.StatusCode)}, &statusError{code: resp.StatusCode}
	}
	return Result{Summary: fmt.Sprintf("HTTP %d", resp.StatusCode)}, nil
}

// isNetworkError reports errors of reaching the server at all: DNS, connect, reset.
func isNetworkError(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || errors.As(err, &op) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}
