package directory_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRegistry is a registry's GET /v0/servers on loopback. It serves a listing (set) as the
// registry does: only the entries updated after updated_since, in pages of at most limit entries
// (and at most its own page size), linked by the cursors "p2", "p3", ...; or, for a cursor given
// a raw page (setRaw), that body and status. Every request's query is kept.
type fakeRegistry struct {
	mu       sync.Mutex
	entries  []regEntry
	pageSize int
	pages    map[string]fakePage // raw pages by cursor, served before the listing's
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
	if !ok {
		p, ok = r.listingPage(q)
	}
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

// listingPage is the page of the listing q asks for: the entries updated after updated_since,
// limit (at most the page size) a page, the cursor "pN" for page N. A query the registry would
// refuse is a 400.
func (r *fakeRegistry) listingPage(q url.Values) (fakePage, bool) {
	if r.pageSize == 0 {
		return fakePage{}, false
	}
	var listed []regEntry
	if since := q.Get("updated_since"); since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return fakePage{status: http.StatusBadRequest, body: `{"error":"updated_since"}`}, true
		}
		for _, e := range r.entries {
			if e.updatedAt().After(t) {
				listed = append(listed, e)
			}
		}
	} else {
		listed = r.entries
	}
	size := r.pageSize
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return fakePage{status: http.StatusBadRequest, body: `{"error":"limit"}`}, true
		}
		size = min(size, n)
	}
	page := 1
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "p"))
		if err != nil || !strings.HasPrefix(c, "p") || n < 2 || (n-1)*size >= len(listed) {
			return fakePage{}, false
		}
		page = n
	}
	from := (page - 1) * size
	to := min(from+size, len(listed))
	next := ""
	if to < len(listed) {
		next = fmt.Sprintf("p%d", page+1)
	}
	return fakePage{body: listBody(listed[from:to], next)}, true
}

// set replaces what the registry serves: a listing of the entries of every list, in order, served
// in pages of the longest list's length (so that with no updated_since each list is one page).
func (r *fakeRegistry) set(pages ...[]regEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pages = map[string]fakePage{}
	r.entries, r.pageSize = nil, 1
	for _, entries := range pages {
		r.entries = append(r.entries, entries...)
		r.pageSize = max(r.pageSize, len(entries))
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
	updated := e.updatedAt()
	return map[string]any{"server": server, "_meta": map[string]any{
		"io.modelcontextprotocol.registry/official": map[string]any{
			"status": status, "isLatest": !e.NotLatest, "updatedAt": updated.Format(time.RFC3339Nano),
			"publishedAt": "2025-10-01T00:00:00Z"}}}
}

// updatedAt is the entry's updatedAt as served (a zero one is 2026-01-01).
func (e regEntry) updatedAt() time.Time {
	if e.UpdatedAt.IsZero() {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return e.UpdatedAt
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
