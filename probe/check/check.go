package check

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"
)

// Defaults for a zero Config.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultMaxBodyBytes   = 1 << 20
	// MaxRedirects bounds the redirects one request follows; each hop also counts against the
	// request budget.
	MaxRedirects = 5
	// MaxURLBytes bounds the URL of any request a check sends, a redirect's target included:
	// RFC 9110 asks recipients to accept at least 8,000 octets, and a longer target is only a
	// way to make the check costlier (every URL is parsed, stored and redacted).
	MaxURLBytes = 8192
)

// Config tunes a Checker; zero fields take the defaults.
type Config struct {
	// RequestTimeout bounds each request, from sending it to the end of its body (default 10s).
	// A whole check is bounded by MaxRequests × RequestTimeout.
	RequestTimeout time.Duration
	// MaxBodyBytes caps each response body (default 1 MiB); a larger one fails the check.
	MaxBodyBytes int64
	// AllowPrivate lets checks reach loopback, private and other non-public addresses (a fleet
	// on a test network). Cloud metadata endpoints (MetadataEndpoints) and link-local addresses
	// (169.254.0.0/16, fe80::/10) stay refused.
	AllowPrivate bool
	// UserAgent is sent with every request (default UserAgent(<module version>, DefaultContact)).
	UserAgent string
	// DecodeSlots bound the large answers read and decoded at once, shared by the Checkers of a
	// process (nil: the Checker's own).
	DecodeSlots *DecodeSlots
}

// Checker makes checks. It is safe for concurrent use; each check gets its own connections,
// so one server's check never reuses another's connection or budget.
type Checker struct {
	cfg Config
	// version is the binary's module version, read once: the MCP client names itself with it.
	version string
	// allow, rootCAs and lookup are seams for tests: a policy that admits one loopback port, a
	// pool that trusts an httptest certificate, a resolver with fixed answers. Production uses
	// the SSRF policy, the system roots and the system resolver.
	allow   policy
	rootCAs *x509.CertPool
	lookup  lookupFunc // a resolver that answers what a test needs; nil is the system's
	dial    dialFunc   // a dialer that records and never connects; nil is the guard's own
	// started, if set, sees each check's context once its budget is set (tests read the deadline).
	started func(ctx context.Context)
	// decodes are the slots large answers are decoded in (MaxLargeDecodes), shared by its checks.
	decodes chan struct{}
}

// New returns a Checker with cfg's zero fields set to the defaults.
func New(cfg Config) *Checker {
	version := moduleVersion()
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = UserAgent(version, DefaultContact)
	}
	if cfg.DecodeSlots == nil {
		cfg.DecodeSlots = NewDecodeSlots()
	}
	return &Checker{cfg: cfg, version: version, allow: defaultPolicy(cfg.AllowPrivate), decodes: cfg.DecodeSlots.ch}
}

// Check checks one server. It never panics and never returns an error: whatever happened is
// the observation, with Outcome ok, failed (the server answered wrongly, or policy refused it)
// or error (the check could not be made: DNS, connect, timeout).
func (c *Checker) Check(ctx context.Context, t Target) (res Result) {
	started := time.Now()
	rec, client := c.newClient()
	defer func() {
		if p := recover(); p != nil {
			res = Result{Outcome: OutcomeError, Summary: "internal error", Error: rec.redact(fmt.Sprintf("check panicked: %v", p))}
		}
		client.CloseIdleConnections()
		res.Requests, res.RefusedRequests, _ = rec.snapshot()
		if res.Requests == nil {
			res.Requests = []Request{}
		}
		res.StartedAt = started.UTC()
		res.FinishedAt = time.Now().UTC()
	}()

	ctx, cancel := context.WithTimeout(ctx, time.Duration(MaxRequests)*c.cfg.RequestTimeout)
	defer cancel()
	if c.started != nil {
		c.started(ctx)
	}
	if u, err := url.Parse(t.URL); err == nil {
		rec.see(u)
	}
	if err := validateURL(t.URL); err != nil {
		return Result{Outcome: OutcomeFailed, Summary: "bad url", Error: rec.redact(err.Error())}
	}
	var err error
	switch t.Kind {
	case "http":
		res, err = c.checkHTTP(ctx, client, t)
	case "mcp":
		res, err = c.checkMCP(ctx, client, rec, t)
	default:
		return Result{Outcome: OutcomeFailed, Summary: "unknown kind", Error: fmt.Sprintf("unknown check kind %q (want mcp or http)", t.Kind)}
	}
	if err == nil {
		res.Outcome = OutcomeOK
		return res
	}
	// A transport-level problem (refused, over budget, too large, timed out) explains a failure
	// better than the error it caused further up, in the SDK or the HTTP client.
	_, _, problem := rec.snapshot()
	if problem != nil {
		res.Summary = summaryOf(problem)
	} else {
		problem = err
		if res.Summary == "" {
			res.Summary = summaryOf(problem)
		}
	}
	res.Outcome = outcomeOf(problem)
	res.Error = clip(rec.redact(problem.Error()), maxErrorLen)
	if busy := (*SlotsBusyError)(nil); errors.As(problem, &busy) {
		res.Fault = FaultProbectl // the process was busy: nothing about the server
	}
	var limited *RateLimitedError
	if errors.As(problem, &limited) {
		res.RetryAfterSeconds = limited.RetryAfter.Seconds()
	}
	return res
}

// maxErrorLen bounds Result.Error: part of it may be text the server chose.
const maxErrorLen = 1000

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// outcomeOf sorts a failure: the server (or our policy about it) is at fault → failed; the
// check could not be made → error.
func outcomeOf(err error) string {
	var refused *RefusedError
	var budget *BudgetError
	var oversize *OversizeError
	var shape *ShapeError
	var cert *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var redirect *redirectError
	var status *statusError
	var limited *RateLimitedError
	switch {
	case errors.As(err, &limited),
		errors.As(err, &refused), errors.As(err, &budget), errors.As(err, &oversize),
		errors.As(err, &shape), errors.As(err, &cert), errors.As(err, &unknownAuth), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &redirect), errors.As(err, &status):
		return OutcomeFailed
	}
	var timeout *TimeoutError
	var busy *SlotsBusyError
	var netErr interface{ Timeout() bool }
	if errors.As(err, &busy) || errors.As(err, &timeout) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || isNetworkError(err) {
		return OutcomeError
	}
	// Anything else came from the server's answer: a protocol error, a JSON-RPC error.
	return OutcomeFailed
}

func summaryOf(err error) string {
	var refused *RefusedError
	var budget *BudgetError
	var oversize *OversizeError
	var shape *ShapeError
	var timeout *TimeoutError
	var busy *SlotsBusyError
	var status *statusError
	var limited *RateLimitedError
	var origin *OriginError
	switch {
	case errors.As(err, &origin):
		return origin.summary()
	case errors.As(err, &limited):
		return "rate_limited"
	case errors.As(err, &refused):
		return "refused by the SSRF guard"
	case errors.As(err, &budget):
		return "request budget spent"
	case errors.As(err, &oversize):
		return "response too large"
	case errors.As(err, &shape):
		return "response too large to decode"
	case errors.As(err, &busy):
		return "could not check: decode slots busy"
	case errors.As(err, &timeout):
		return "timed out"
	case errors.As(err, &status):
		return fmt.Sprintf("HTTP %d", status.code)
	}
	return outcomeOf(err)
}

// newClient builds the HTTP client of one check: SSRF-guarded dialer, no proxy, verified TLS,
// and the recorder in front of it all.
func (c *Checker) newClient() (*recorder, *http.Client) {
	g := newGuard(c.allow, c.lookup)
	if c.dial != nil {
		g.dial = c.dial
	}
	base := &http.Transport{
		Proxy:       nil, // an environment proxy would dial for us, around the guard
		DialContext: g.DialContext,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			RootCAs:    c.rootCAs,
		},
		// No transport-level timeouts: the recorder's per-request deadline covers dial, TLS,
		// headers and body, and reports them all alike.
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
		// One request per connection. On a kept-alive connection that the server closes, Go's
		// transport silently sends a GET again on a new one (and HTTP/2 re-sends a refused
		// stream up to 7 times): the server then receives requests the recorder never saw.
		// Without reuse, a request is a connection, and the guard's dialer counts them.
		DisableKeepAlives: true,
	}
	rec := &recorder{
		base: base, max: MaxRequests, timeout: c.cfg.RequestTimeout,
		maxBody: c.cfg.MaxBodyBytes, userAgent: c.cfg.UserAgent,
	}
	g.conns = rec
	return rec, &http.Client{Transport: rec, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if err := checkTargetLength(req.URL); err != nil {
			// Checked before see, so the target is not remembered; net/http quotes it in the
			// error it returns, so the check's problem is this one, which does not.
			rec.note(err)
			return err
		}
		rec.see(req.URL) // a refused hop is quoted in the error without reaching the recorder
		return checkRedirect(req, via)
	}}
}

// redirectError is a redirect we will not follow.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// checkRedirect re-validates every hop: at most MaxRedirects, http or https only. The new
// host's addresses are checked by the guard when it is dialled.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return &redirectError{fmt.Sprintf("stopped after %d redirects", MaxRedirects)}
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return &redirectError{fmt.Sprintf("refused redirect to scheme %q (http or https only)", req.URL.Scheme)}
	}
	return nil
}

// checkTargetLength refuses a request URL longer than MaxURLBytes, without quoting it.
func checkTargetLength(u *url.URL) error {
	if n := len(u.String()); n > MaxURLBytes {
		return &redirectError{fmt.Sprintf("refused a URL of %d bytes: longer than the %d-byte limit", n, MaxURLBytes)}
	}
	return nil
}

func validateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, which we could not parse to redact.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("endpoint url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("endpoint url %q: scheme must be http or https", redactedURL(u))
	}
	if u.Hostname() == "" {
		return fmt.Errorf("endpoint url %q: no host", redactedURL(u))
	}
	return nil
}

// moduleVersion is the version the binary was built as, for the default User-Agent.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
