package check

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OriginError says an SSE server pointed the client at another origin: its endpoint event named
// one for the client's messages, or it redirected a request there (a 303 answer to a message
// POST makes the client GET the new location). The check fails and nothing is sent there.
type OriginError struct {
	Endpoint, Origin string
	// Redirect: the request refused was a redirect the server answered with.
	Redirect bool
}

func (e *OriginError) Error() string {
	if e.Redirect {
		return fmt.Sprintf("refused to follow a redirect to %s: an sse server must keep the client on its origin %s", e.Endpoint, e.Origin)
	}
	return fmt.Sprintf("refused to post to %s: the sse endpoint event must name the server's origin %s", e.Endpoint, e.Origin)
}

// summary is the check's summary when this refusal failed it.
func (e *OriginError) summary() string {
	if e.Redirect {
		return "sse redirect to another origin"
	}
	return "sse endpoint on another origin"
}

// sseTransport is the SDK's SSE client transport over a client that refuses any request off the
// server's origin: a POST the endpoint event points elsewhere, or a redirect to elsewhere.
func (c *Checker) sseTransport(client *http.Client, watch *wireWatch, endpoint string) mcp.Transport {
	u, _ := url.Parse(endpoint) // validated before the check began
	guarded := &http.Client{
		Transport:     &originGuard{next: client.Transport, origin: originOf(u), watch: watch},
		CheckRedirect: client.CheckRedirect,
	}
	return &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: guarded, MaxEventSize: int(c.cfg.MaxBodyBytes)}
}

// originGuard refuses every request whose origin is not the server's, before it reaches the
// recorder. http.Client hands each redirect hop to the transport as a request of its own, so a
// hop to another origin is refused here too, whatever its method.
type originGuard struct {
	next   http.RoundTripper
	origin string
	watch  *wireWatch // told of a refusal: the SDK may report its own error instead
}

func (g *originGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if originOf(req.URL) != g.origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		err := &OriginError{Endpoint: redactedURL(req.URL), Origin: g.origin, Redirect: req.Response != nil}
		g.watch.refuse(err)
		return nil, err
	}
	return g.next.RoundTrip(req)
}

// originOf is scheme://host[:port], lower-cased, default ports dropped.
func originOf(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// wireWatch remembers what the SDK's errors do not carry: the WWW-Authenticate header of the
// first 401 a check receives (the auth check needs it; the SDK keeps only the status), and a POST
// the origin guard refused (the SDK may report the session's closing instead).
type wireWatch struct {
	next    http.RoundTripper
	mu      sync.Mutex
	seen    bool
	www     []string
	refused *OriginError
}

// refuse remembers the first refusal, and makes it the check's problem when the watch wraps the
// recorder: after the session is open the SDK reports it as a broken connection, which would
// blame the network for what the server did.
func (w *wireWatch) refuse(err *OriginError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused == nil {
		w.refused = err
	}
	if rec, ok := w.next.(*recorder); ok {
		rec.note(err)
	}
}

func (w *wireWatch) originRefused() *OriginError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

func (w *wireWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		w.mu.Lock()
		if !w.seen {
			w.seen, w.www = true, resp.Header.Values("WWW-Authenticate")
		}
		w.mu.Unlock()
	}
	return resp, err
}

func (w *wireWatch) challenge() (bool, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen, w.www
}
