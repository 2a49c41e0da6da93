// Package fakefleet is the tests' fleet: one loopback HTTP server standing for as many servers as
// a test needs (/s/<n> is server n), which records every request that reaches it, so a test can
// hold a check to its budget, its headers and its timing as the servers saw them. For SSRF tests
// it also gives a test a network namespace of its own (InNetworkNamespace), where the addresses
// the guard must refuse are decoys on loopback.
//
// It is not the demo's fleet (internal/demo): that one is shipped in the binary, with a fixed
// mix of behaviours chosen for the narration, and a test's fleet needs what the binary must not
// carry: any handler the test writes, and a record of every request kept for assertions. Only
// tests import this package.
package fakefleet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Fleet is a loopback server that records what reached it. Its URL is the fleet's base.
type Fleet struct {
	*httptest.Server
	hits atomic.Int64

	mu   sync.Mutex
	seen []*http.Request
	at   map[string][]time.Time // by path: when each request arrived
}

// New serves h on 127.0.0.1 (nil: every server answers 200 "ok") until the test ends. A request
// is recorded when it arrives, before h sees it.
func New(t testing.TB, h http.Handler) *Fleet {
	t.Helper()
	return newFleet(t, h, true)
}

// NewCounting is New without the record: it counts the requests (Hits) and keeps none of them, so
// that a benchmark's memory is the prober's, not the thousands of requests a record would hold.
func NewCounting(t testing.TB, h http.Handler) *Fleet {
	t.Helper()
	return newFleet(t, h, false)
}

func newFleet(t testing.TB, h http.Handler, record bool) *Fleet {
	if h == nil {
		h = http.HandlerFunc(OK)
	}
	f := &Fleet{at: map[string][]time.Time{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		f.hits.Add(1)
		if record {
			f.mu.Lock()
			f.seen = append(f.seen, r.Clone(context.Background()))
			f.at[r.URL.Path] = append(f.at[r.URL.Path], arrived)
			f.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// OK answers 200 "ok".
func OK(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }

// Hits is how many requests reached the fleet.
func (f *Fleet) Hits() int64 { return f.hits.Load() }

// Requests are the requests that reached the fleet, in the order they arrived.
func (f *Fleet) Requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.seen...)
}

// Arrivals are the times requests arrived, by URL path (/s/<n> for server n).
func (f *Fleet) Arrivals() map[string][]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]time.Time, len(f.at))
	for p, ts := range f.at {
		out[p] = append([]time.Time(nil), ts...)
	}
	return out
}

// ServerURL is server n's URL: the fleet's base and /s/<n>.
func (f *Fleet) ServerURL(n int) string { return f.URL + "/s/" + strconv.Itoa(n) }

// Port is the port the fleet listens on.
func (f *Fleet) Port(t testing.TB) uint16 {
	t.Helper()
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatalf("fakefleet: %v", err)
	}
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatalf("fakefleet: port of %s: %v", f.URL, err)
	}
	return uint16(p)
}

// AddServers adds n of the fleet's servers to the directory and returns their ids: slug
// <prefix>-<n> (prefix "fleet" when empty) and ServerURL(n), with the other fields of opts (due an
// hour ago when opts.NextCheckAt is nil).
func (f *Fleet) AddServers(t testing.TB, db queries.DBTX, n int, prefix string, opts testfactory.ServerOpts) []int64 {
	t.Helper()
	if prefix == "" {
		prefix = "fleet"
	}
	if opts.NextCheckAt == nil {
		opts.NextCheckAt = testfactory.Ptr(time.Now().Add(-time.Hour))
	}
	ids := make([]int64, n)
	for i := range n {
		o := opts
		o.Slug, o.URL = fmt.Sprintf("%s-%d", prefix, i), f.ServerURL(i)
		ids[i] = testfactory.Server(context.Background(), t, db, &o)
	}
	return ids
}
