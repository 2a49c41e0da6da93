package check

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds the Retry-After a result records: a server may ask for anything, and the
// scheduler caps the wait at the server's interval anyway.
const maxRetryAfter = 7 * 24 * time.Hour

// RateLimitedError says the server answered 429 or 503 with a Retry-After: it asked to be left
// alone for a while. The check is failed with the summary "rate_limited", and the result carries
// the wait it asked for (Result.RetryAfterSeconds).
type RateLimitedError struct {
	Status     int
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate_limited: HTTP %d %s, Retry-After %s", e.Status, http.StatusText(e.Status), e.RetryAfter)
}

// rateLimit returns the RateLimitedError a response stands for, or nil: a 429 or 503 with a
// Retry-After that parses (delta-seconds or an HTTP date, RFC 9110 §10.2.3).
func rateLimit(resp *http.Response, now time.Time) *RateLimitedError {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return nil
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return nil
	}
	var wait time.Duration
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		wait = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		wait = max(at.Sub(now).Truncate(time.Second), 0)
	} else {
		return nil
	}
	return &RateLimitedError{Status: resp.StatusCode, RetryAfter: min(wait, maxRetryAfter)}
}
