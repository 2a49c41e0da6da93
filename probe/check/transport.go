package check

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// BudgetError says a request was not sent because the check had already made MaxRequests.
type BudgetError struct {
	Max    int
	Method string
	URL    string
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("refused to send %s %s: request budget of %d per check spent", e.Method, e.URL, e.Max)
}

// OversizeError says a response body was larger than the cap; reading stopped there.
type OversizeError struct{ Limit int64 }

func (e *OversizeError) Error() string {
	return fmt.Sprintf("response larger than the %d-byte cap; stopped reading", e.Limit)
}

// TimeoutError says one request took longer than the per-request timeout.
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string { return fmt.Sprintf("request timed out after %s", e.After) }

// Timeout lets net-style callers see it as a timeout.
func (e *TimeoutError) Timeout() bool { return true }

// recorder is the round tripper every request of a check goes through, whoever makes it (our
// GET, or the MCP SDK): it enforces the budget, the per-request timeout and the size cap, and
// records each request. It is safe for concurrent use, since the SDK sends from goroutines.
type recorder struct {
	base      http.RoundTripper
	max       int
	timeout   time.Duration
	maxBody   int64
	userAgent string
	// shape, when set (an MCP check), bounds the JSON structure of every response before the SDK
	// decodes it, and gate makes a large answer wait for a decode slot (see shape.go).
	shape *shapeBudget
	gate  *decodeGate

	mu       sync.Mutex
	requests []Request
	conns    int   // connections dialled, each one request on the wire (keep-alives are off)
	overflow int   // requests refused because the budget was spent
	problem  error // the first transport-level failure, which explains a failed check best
	// secrets maps what error text may quote of a URL the check has seen (user info, query
	// string, fragment) to what may be stored instead; see redact.
	secrets map[string]string
	// replacer is built from secrets once, when first needed after a secret was added: building
	// it per redaction made a check's CPU grow with the square of a hostile URL's length.
	replacer *strings.Replacer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkTargetLength(req.URL); err != nil {
		// Whoever built the request (the SDK follows URLs a server names), it is not sent.
		r.note(err)
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	rpc := rpcMethod(req)
	shown := redactedURL(req.URL)
	start := time.Now()
	r.see(req.URL)
	// The fence first: past the job's lease, no request leaves, and none is counted.
	if err := refuseFenced(req); err != nil {
		r.mu.Lock()
		r.noteLocked(err)
		r.mu.Unlock()
		return nil, err
	}

	r.mu.Lock()
	if len(r.requests) >= r.max {
		r.overflow++
		err := &BudgetError{Max: r.max, Method: req.Method, URL: shown}
		r.noteLocked(err)
		r.mu.Unlock()
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	idx := len(r.requests)
	r.requests = append(r.requests, Request{Method: req.Method, URL: shown, RPC: rpc, StartedAt: start.UTC()})
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(req.Context(), r.timeout)
	// The transport may send the request again on a new connection (HTTP/2 re-sends a stream
	// the server refused); every connection it takes for this request is one more sent.
	var gotConns atomic.Int32
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		if gotConns.Add(1) > 1 {
			r.update(idx, func(q *Request) { q.Resent++ })
		}
	}})
	out := req.Clone(ctx)
	out.Header.Set("User-Agent", r.userAgent)
	resp, err := r.base.RoundTrip(out)
	latency := time.Since(start).Seconds()
	if err != nil {
		err = r.explain(req.Context(), ctx, err)
		cancel()
		r.fail(idx, err, func(q *Request) { q.LatencySeconds = latency })
		return nil, err
	}
	if rl := rateLimit(resp, time.Now()); rl != nil {
		r.note(rl) // the server asked to be left alone: that explains the check best
	}
	r.update(idx, func(q *Request) {
		q.Status = resp.StatusCode
		q.LatencySeconds = latency
		q.TLS = tlsInfo(resp.TLS)
	})
	if resp.ContentLength > r.maxBody {
		_ = resp.Body.Close()
		cancel()
		err := &OversizeError{Limit: r.maxBody}
		r.fail(idx, err, nil)
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, rec: r, idx: idx, parent: req.Context(), ctx: ctx, cancel: cancel,
		shape: newShapeScan(r.shape, req, resp)}
	return resp, nil
}

// reserveConn admits one more connection, hence one more request on the wire, within the budget.
func (r *recorder) reserveConn(address string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns >= r.max {
		err := &BudgetError{Max: r.max, Method: "connect", URL: address}
		r.noteLocked(err)
		return err
	}
	r.conns++
	return nil
}

// releaseConn gives back a reservation whose dial failed: nothing reached the server.
func (r *recorder) releaseConn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns--
}

// CloseIdleConnections closes the check's kept-alive connections when it ends (http.Client
// only reaches the transport's through its Transport, which is the recorder).
func (r *recorder) CloseIdleConnections() {
	if ci, ok := r.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// explain says why a request ended early: the whole check was stopped (parent done), or this
// request's own deadline passed (a TimeoutError); other errors pass unchanged.
func (r *recorder) explain(parent, ctx context.Context, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("check stopped: %w", context.Cause(parent))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{After: r.timeout}
	}
	return err
}

func (r *recorder) update(idx int, f func(*Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.requests[idx])
}

// fail records err on request idx and as the check's problem if it is the first.
func (r *recorder) fail(idx int, err error, f func(*Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := &r.requests[idx]
	if f != nil {
		f(q)
	}
	if q.Error == "" {
		q.Error = r.redactLocked(err.Error())
	}
	r.noteLocked(err)
}

func (r *recorder) note(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteLocked(err)
}

func (r *recorder) noteLocked(err error) {
	if r.problem == nil {
		r.problem = err
	}
}

// remaining is how many more requests the budget allows.
func (r *recorder) remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.max - len(r.requests)
}

// snapshot copies what was recorded; the SDK may still be reading a body in the background.
func (r *recorder) snapshot() (reqs []Request, overflow int, problem error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...), r.overflow, r.problem
}

// cappedBody counts what is read, stops after maxBody bytes, and ends the request's timeout
// when the body is done with. An MCP check's body (shape set) is scanned as it is read and handed
// on only once judged: raw JSON whole, server-sent events one whole event at a time. A large
// answer then waits for a decode slot (see MaxLargeDecodes) with all its bytes in hand, so no
// slot is held while a server sends.
type cappedBody struct {
	rc     io.ReadCloser
	rec    *recorder
	idx    int
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	n      int64
	err    error
	once   sync.Once
	shape  *shapeScan // nil: the body's structure is not bounded, and it is passed on as read

	// An MCP body: ready is judged and not yet handed on; pending is read but not yet judged
	// whole (the answer, or the event, is unfinished); end is how the network read ended (io.EOF
	// or an error), handed on once ready is.
	ready, pending [][]byte // pieces (see pieceSize)
	pendingLen     int      // the bytes in pending
	end            error
	holds          bool // this body took the check's decode slot for what it hands on

	// closed: the client closed the body (the SDK ends an SSE stream that way); a read that then
	// fails says nothing about the server.
	closed atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.shape != nil {
		return b.readJudged(p)
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.readCapped(p)
	if b.n > b.rec.maxBody {
		n -= int(b.n - b.rec.maxBody)
		b.failed(&OversizeError{Limit: b.rec.maxBody})
		return n, b.err
	}
	if err != nil {
		err = b.ended(err)
	}
	return n, err
}

// readCapped reads into p at most one byte past the cap, so that a body of exactly the cap is not
// taken for a larger one, and counts what it read.
func (b *cappedBody) readCapped(p []byte) (int, error) {
	if room := b.rec.maxBody + 1 - b.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	total := b.n
	b.rec.update(b.idx, func(q *Request) { q.Bytes = total })
	return n, err
}

// ended says how a read that returned err ends the body: io.EOF as it is, an error as the
// server's (or the check's, see explain) unless the client had closed the body.
func (b *cappedBody) ended(err error) error {
	switch {
	case err == io.EOF:
		b.done()
	case b.closed.Load():
		b.done()
	default:
		err = b.rec.explain(b.parent, b.ctx, err)
		b.failed(err)
	}
	return err
}

// failed ends the body with err, recorded on its request.
func (b *cappedBody) failed(err error) {
	b.err = err
	b.rec.fail(b.idx, err, nil)
	b.done()
}

// readJudged hands on what has been read and judged; it reads on from the network when nothing is.
func (b *cappedBody) readJudged(p []byte) (int, error) {
	for len(b.ready) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.end != nil {
			return 0, b.end // the slot, if any, is held until the call returns: the SDK decodes now
		}
		if b.shape.sse {
			// The SDK asks for more of the stream: the events handed on are decoded, and waiting
			// on the server holds no slot. (A JSON answer is read whole before it is handed on.)
			b.release()
		}
		if err := b.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, b.ready[0])
	if b.ready[0] = b.ready[0][n:]; len(b.ready[0]) == 0 {
		b.ready = b.ready[1:]
	}
	return n, nil
}

// pieceSize is the size of the pieces a judged body is read into: a body is kept in pieces, not
// in one buffer grown as it arrives, whose every growth left the last as garbage (the bodies of
// all of a worker's checks are held at once while they wait for decode slots).
const pieceSize = 32 << 10

// fill reads one piece from the network, judges it, and moves to ready what is whole: the answer
// at its end (JSON), or every event that ended (SSE). Before a large piece is made ready, the
// check takes a decode slot.
func (b *cappedBody) fill() error {
	if len(b.pending) == 0 || len(b.pending[len(b.pending)-1]) == pieceSize {
		b.pending = append(b.pending, make([]byte, 0, pieceSize))
	}
	last := len(b.pending) - 1
	piece := b.pending[last]
	start := len(piece)
	n, err := b.readCapped(piece[start:pieceSize])
	piece = piece[:start+n]
	b.pending[last] = piece
	b.pendingLen += n
	limit := b.rec.maxBody
	within := n
	if b.n > limit {
		within -= int(b.n - limit) // the read that crosses the cap is judged up to the cap
	}
	whole, serr := b.shape.scanEvents(piece[start : start+within])
	if serr != nil {
		// None of it is passed on: it would complete the message that passed the bound.
		b.failed(serr)
		return serr
	}
	if b.n > limit {
		b.failed(&OversizeError{Limit: limit})
		return b.err
	}
	cut := -1 // where in the last piece what is whole ends: every event that ended, or all at the end
	if b.shape.sse && whole > 0 {
		cut = start + whole
	}
	switch {
	case err == io.EOF:
		cut, b.end = len(piece), io.EOF // the answer, or the stream's last unfinished event
	case err != nil:
		return b.ended(err)
	}
	if cut < 0 {
		return nil
	}
	ready := append(b.pending[:last:last], piece[:cut])
	size := b.pendingLen - (len(piece) - cut)
	var rest [][]byte
	if cut < len(piece) {
		rest = [][]byte{append(make([]byte, 0, pieceSize), piece[cut:]...)}
	}
	b.pending, b.pendingLen = rest, len(piece)-cut
	// A slot is waited for within the request's time, so before the end of the body ends it.
	if aerr := b.makeReady(ready, size); aerr != nil {
		return aerr
	}
	if b.end != nil {
		b.done()
	}
	return nil
}

// makeReady hands data on, in a decode slot when it is a large answer.
func (b *cappedBody) makeReady(pieces [][]byte, size int) error {
	if size >= largeAnswer && !b.holds {
		if err := b.rec.gate.acquire(b.ctx, b); err != nil {
			if !errors.Is(err, errCheckEnded) {
				if b.parent.Err() == nil && errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
					err = &SlotsBusyError{After: b.rec.timeout} // the wait was ours, not the server's
				} else {
					err = b.rec.explain(b.parent, b.ctx, err)
				}
			}
			b.failed(err)
			return err
		}
		b.holds = true
	}
	for _, p := range pieces {
		if len(p) > 0 {
			b.ready = append(b.ready, p)
		}
	}
	return nil
}

// release gives back the decode slot this body took, if the check still holds it for it.
func (b *cappedBody) release() {
	if b.holds {
		b.rec.gate.releaseFor(b)
		b.holds = false
	}
}

func (b *cappedBody) Close() error {
	b.closed.Store(true)
	err := b.rc.Close()
	b.done()
	return err
}

func (b *cappedBody) done() { b.once.Do(b.cancel) }

// rpcMethod names the JSON-RPC message a POST carries ("initialize", "tools/list", …), or
// "response" for the client's answer to a server request; "" when it is not JSON-RPC.
func rpcMethod(req *http.Request) string {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return ""
	}
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &msg) != nil {
		return ""
	}
	if msg.Method == "" && msg.ID != nil {
		return "response"
	}
	return msg.Method
}

// redactedURL is a request URL fit to store in a run: no user info, every query value replaced
// by "redacted" (names kept), no fragment. A directory entry may carry credentials in any of
// them.
func redactedURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = redactQuery(c.RawQuery)
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// redactQuery keeps each parameter's name and replaces its value; a part without "=" may be a
// bare token, so it is replaced whole.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		if name, _, found := strings.Cut(p, "="); found {
			parts[i] = name + "=redacted"
		} else {
			parts[i] = "redacted"
		}
	}
	return strings.Join(parts, "&")
}

// see remembers the secrets u could put in error text: net/http and the SDK quote the whole
// URL (password masked, user name, query and fragment kept) in the errors they return.
func (r *recorder) see(u *url.URL) {
	add := func(old, replacement string) {
		if old == "" || old == replacement {
			return
		}
		if _, known := r.secrets[old]; !known {
			r.secrets[old] = replacement
			r.replacer = nil
		}
		// url.Error quotes the URL with %q, which escapes some bytes.
		if q := strconv.Quote(old); q[1:len(q)-1] != old {
			if _, known := r.secrets[q[1:len(q)-1]]; !known {
				r.secrets[q[1:len(q)-1]] = replacement
				r.replacer = nil
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = map[string]string{}
	}
	if u.User != nil {
		add(u.User.String()+"@", "")
		add(url.UserPassword(u.User.Username(), "***").String()+"@", "")
	}
	if u.RawQuery != "" {
		add("?"+u.RawQuery, "?"+redactQuery(u.RawQuery))
	}
	if f := u.EscapedFragment(); f != "" {
		add("#"+f, "")
		add("#"+u.Fragment, "")
	}
}

// redact removes from s every secret of the URLs seen so far.
func (r *recorder) redact(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.redactLocked(s)
}

func (r *recorder) redactLocked(s string) string {
	if len(r.secrets) == 0 {
		return s
	}
	if r.replacer != nil {
		return r.replacer.Replace(s)
	}
	olds := make([]string, 0, len(r.secrets))
	for old := range r.secrets {
		olds = append(olds, old)
	}
	// Longest first: "?a=1" must not mask only the start of "?a=1&token=x".
	slices.SortFunc(olds, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(olds)+2)
	for _, old := range olds {
		pairs = append(pairs, old, r.secrets[old])
	}
	// Given one pair, strings.NewReplacer builds a Boyer-Moore finder whose table takes time
	// quadratic in the pattern's length when the pattern repeats itself: a query of 8 KB of "a"
	// cost 22 ms per build, 60 KB cost 4 s, and a test on an 8 KB URL took minutes under the race
	// detector. Given two or more it builds a trie, in linear time. So there are always two: the
	// last replaces NUL by itself (a no-op, and no URL carries NUL: url.Parse refuses control
	// bytes), which keeps every set of secrets on the trie.
	pairs = append(pairs, "\x00", "\x00")
	r.replacer = strings.NewReplacer(pairs...)
	return r.replacer.Replace(s)
}

func tlsInfo(cs *tls.ConnectionState) *TLSInfo {
	if cs == nil {
		return nil
	}
	info := &TLSInfo{Version: tls.VersionName(cs.Version)}
	if len(cs.PeerCertificates) > 0 {
		leaf := cs.PeerCertificates[0]
		info.Subject = leaf.Subject.String()
		info.Issuer = leaf.Issuer.String()
		info.CertNotAfter = leaf.NotAfter.UTC()
	}
	return info
}
