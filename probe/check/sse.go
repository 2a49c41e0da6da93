package check

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OriginError says an SSE server's endpoint event pointed the client's messages at another
// origin: the check fails and nothing is sent there.
type OriginError struct{ Endpoint, Origin string }

func (e *OriginError) Error() string {
	return fmt.Sprintf("refused to post to %s: the sse endpoint event must name the server's origin %s", e.Endpoint, e.Origin)
}

// sseTransport is the SDK's SSE client transport over a client that refuses any POST off the
// server's origin (the endpoint event decides where the SDK posts).
func (c *Checker) sseTransport(client *http.Client, watch *wireWatch, endpoint string) mcp.Transport {
	u, _ := url.Parse(endpoint) // validated before the check began
	guarded := &http.Client{
		Transport:     &originGuard{next: client.Transport, origin: originOf(u), watch: watch},
		CheckRedirect: client.CheckRedirect,
	}
	return &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: guarded, MaxEventSize: int(c.cfg.MaxBodyBytes)}
}

// originGuard refuses POSTs whose origin is not the server's, before they reach the recorder.
type originGuard struct {
	next   http.RoundTripper
	origin string
	watch  *wireWatch // told of a refusal: the SDK may report its own error instead
}

func (g *originGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && originOf(req.URL) != g.origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		err := &OriginError{Endpoint: redactedURL(req.URL), Origin: g.origin}
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

func (w *wireWatch) refuse(err *OriginError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused == nil {
		w.refused = err
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
