package directory_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// fakeRegistry is a registry's GET /v0/servers on loopback: pages keyed by the cursor that asks
// for them ("" is the first), each a body and a status (0: 200), and every request's query kept.
type fakeRegistry struct {
	mu       sync.Mutex
	pages    map[string]fakePage
	requests []url.Values
	srv      *httptest.Server
	// redirect: a page served with a 3xx status redirects to itself.
	redirect bool
}

type fakePage struct {
	status int
	body   string
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	r := &fakeRegistry{pages: map[string]fakePage{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *fakeRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	q := req.URL.Query()
	r.requests = append(r.requests, q)
	p, ok := r.pages[q.Get("cursor")]
	redirect := r.redirect
	r.mu.Unlock()
	if req.URL.Path != "/v0/servers" || !ok {
		http.NotFound(w, req)
		return
	}
	if redirect && p.status >= 300 && p.status < 400 {
		http.Redirect(w, req, req.URL.String(), p.status)
		return
	}
	if p.status != 0 {
		w.WriteHeader(p.status)
	}
	_, _ = w.Write([]byte(p.body))
}

// set replaces what the registry serves: the lists of entries, one list a page, linked by the
// cursors "p2", "p3", ...
func (r *fakeRegistry) set(pages ...[]regEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pages = map[string]fakePage{}
	for i, entries := range pages {
		cursor, next := "", ""
		if i > 0 {
			cursor = fmt.Sprintf("p%d", i+1)
		}
		if i+1 < len(pages) {
			next = fmt.Sprintf("p%d", i+2)
		}
		r.pages[cursor] = fakePage{body: listBody(entries, next)}
	}
}

// setRaw serves body with status for cursor.
func (r *fakeRegistry) setRaw(cursor string, status int, body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pages[cursor] = fakePage{status: status, body: body}
}

// redirectForever makes every page served with a 3xx status redirect to itself.
func (r *fakeRegistry) redirectForever() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redirect = true
}

// takeRequests returns the requests so far and forgets them.
func (r *fakeRegistry) takeRequests() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// regEntry is one entry of a list response.
type regEntry struct {
	Name      string
	Remotes   []string // "type url"
	Status    string   // active (""), deprecated, deleted
	NotLatest bool
	UpdatedAt time.Time
}

func (e regEntry) json() map[string]any {
	remotes := []map[string]string{}
	for _, r := range e.Remotes {
		var typ, u string
		fmt.Sscan(r, &typ, &u)
		remotes = append(remotes, map[string]string{"type": typ, "url": u})
	}
	server := map[string]any{"name": e.Name, "version": "1.0.0", "remotes": remotes}
	if len(e.Remotes) == 0 {
		server["packages"] = []map[string]string{{"registryType": "npm", "identifier": "x"}}
	}
	status := e.Status
	if status == "" {
		status = "active"
	}
	updated := e.UpdatedAt
	if updated.IsZero() {
		updated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return map[string]any{"server": server, "_meta": map[string]any{
		"io.modelcontextprotocol.registry/official": map[string]any{
			"status": status, "isLatest": !e.NotLatest, "updatedAt": updated.Format(time.RFC3339Nano),
			"publishedAt": "2025-10-01T00:00:00Z"}}}
}

func listBody(entries []regEntry, next string) string {
	servers := make([]map[string]any, len(entries))
	for i, e := range entries {
		servers[i] = e.json()
	}
	meta := map[string]any{"count": len(entries)}
	if next != "" {
		meta["nextCursor"] = next
	}
	b, err := json.Marshal(map[string]any{"servers": servers, "metadata": meta})
	if err != nil {
		panic(err)
	}
	return string(b)
}
