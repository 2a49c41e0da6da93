package demo

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/probe/check"
)

// Behaviour is how a simulated server answers a check.
type Behaviour string

// Behaviours of the fleet's servers.
const (
	// Healthy servers answer after a few milliseconds: HTTP 200, or an MCP server's tools.
	Healthy Behaviour = "healthy"
	// Slow servers answer correctly after SlowDelay, inside the request timeout.
	Slow Behaviour = "slow"
	// Hanging servers never answer: the check times out (outcome error).
	Hanging Behaviour = "hanging"
	// Failing servers answer HTTP 503 (outcome failed).
	Failing Behaviour = "failing"
	// Oversized servers send a body larger than the checker's cap (outcome failed).
	Oversized Behaviour = "oversized"
)

// SlowDelay is how long a slow server takes to answer.
const SlowDelay = 800 * time.Millisecond

// FleetServer is one simulated server.
type FleetServer struct {
	Slug      string
	Kind      string // http | mcp
	Behaviour Behaviour
	URL       string
}

// FleetCounts says what a fleet is made of, for the narration.
type FleetCounts struct {
	HTTP, MCP, Slow, Hanging, Failing, Oversized int
}

func (c FleetCounts) String() string {
	return fmt.Sprintf("%d http, %d MCP servers built with the MCP Go SDK; among them %d slow, %d that never answer, "+
		"%d failing, %d oversized", c.HTTP, c.MCP, c.Slow, c.Hanging, c.Failing, c.Oversized)
}

// Fleet is a few hundred simulated servers behind one listener on 127.0.0.1: /s/<slug> is a
// server. It counts the requests each server sees, so the incident replay can tell when a
// server is being checked again.
type Fleet struct {
	Servers []FleetServer
	Addr    string

	srv      *http.Server
	handlers map[string]http.Handler
	closing  chan struct{}

	mu      sync.Mutex
	hits    map[string]int
	changed chan struct{} // closed and replaced at every hit
}

// fleetPlan decides the fleet's make-up: a few of each awkward kind, an eighth MCP servers, the
// rest plain http; shuffled with a fixed seed, so every run has the same fleet and the awkward
// servers are spread over the rounds.
func fleetPlan(n int) []FleetServer {
	type group struct {
		prefix, kind string
		b            Behaviour
		n            int
	}
	groups := []group{
		{"slow", "http", Slow, 4},
		{"hang", "http", Hanging, 2},
		{"down", "http", Failing, 5},
		{"down-mcp", "mcp", Failing, 1},
		{"huge", "http", Oversized, 3},
		{"mcp", "mcp", Healthy, n / 8},
	}
	special := 0
	for _, g := range groups {
		special += g.n
	}
	groups = append(groups, group{"site", "http", Healthy, max(n-special, 0)})
	var out []FleetServer
	for _, g := range groups {
		for i := range g.n {
			out = append(out, FleetServer{Slug: fmt.Sprintf("%s-%03d", g.prefix, i+1), Kind: g.kind, Behaviour: g.b})
		}
	}
	rand.New(rand.NewPCG(2026, 1007)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(n, len(out))]
}

// StartFleet starts n simulated servers on one loopback listener.
func StartFleet(n int) (*Fleet, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the fleet: listen on 127.0.0.1: %w", err)
	}
	f := &Fleet{Addr: l.Addr().String(), handlers: map[string]http.Handler{}, closing: make(chan struct{}),
		hits: map[string]int{}, changed: make(chan struct{})}
	f.Servers = fleetPlan(n)
	for i := range f.Servers {
		s := &f.Servers[i]
		s.URL = "http://" + f.Addr + "/s/" + s.Slug
		f.handlers[s.Slug] = f.handler(*s, i)
	}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(l) //nolint:errcheck // returns ErrServerClosed on Close
	return f, nil
}

// Close stops the fleet: a hanging server lets go, every connection is closed.
func (f *Fleet) Close() error {
	close(f.closing)
	return f.srv.Close()
}

// Counts says what the fleet is made of.
func (f *Fleet) Counts() FleetCounts {
	var c FleetCounts
	for _, s := range f.Servers {
		if s.Kind == "mcp" {
			c.MCP++
		} else {
			c.HTTP++
		}
		switch s.Behaviour {
		case Slow:
			c.Slow++
		case Hanging:
			c.Hanging++
		case Failing:
			c.Failing++
		case Oversized:
			c.Oversized++
		}
	}
	return c
}

// Rows are the fleet as a directory import: every server on the standard plan (every 12 h).
func (f *Fleet) Rows() ([]directory.Row, error) {
	rows := make([]directory.Row, 0, len(f.Servers))
	for i, s := range f.Servers {
		e := directory.Entry{Slug: s.Slug, URL: s.URL, Kind: s.Kind, Plan: "standard"}
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("fleet server %s: %w", s.Slug, err)
		}
		rows = append(rows, directory.Row{Line: i + 1, Entry: e})
	}
	return rows, nil
}

// Hits is how many requests the server has seen.
func (f *Fleet) Hits(slug string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[slug]
}

// WaitForHit waits until the server has seen more than after requests, or until timeout; it
// says whether it has.
func (f *Fleet) WaitForHit(ctx context.Context, slug string, after int, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		f.mu.Lock()
		n, changed := f.hits[slug], f.changed
		f.mu.Unlock()
		if n > after {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (f *Fleet) serve(w http.ResponseWriter, r *http.Request) {
	slug, ok := strings.CutPrefix(r.URL.Path, "/s/")
	h := f.handlers[slug]
	if !ok || h == nil {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	f.hits[slug]++
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	h.ServeHTTP(w, r)
}

// handler builds one server's behaviour. Every request takes 40 to 240 ms, as on the internet,
// so that the checks of a round spread out rather than finishing all at once.
func (f *Fleet) handler(s FleetServer, i int) http.Handler {
	latency := 40*time.Millisecond + time.Duration(hash(s.Slug)%200)*time.Millisecond
	var inner http.Handler
	switch {
	case s.Kind == "mcp" && s.Behaviour == Healthy:
		inner = mcpHandler(s.Slug, i%6+1)
	case s.Behaviour == Failing:
		inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
		})
	case s.Behaviour == Oversized:
		inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.CopyN(w, zeros{}, 3*check.DefaultMaxBodyBytes/2)
		})
	case s.Behaviour == Hanging:
		inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-f.closing:
			}
		})
	default:
		inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprintf(w, "%s ok\n", s.Slug)
		})
	}
	if s.Behaviour == Slow {
		latency = SlowDelay
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		case <-f.closing:
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// mcpHandler is a real MCP server (the Go SDK's) with a few tools, over streamable HTTP.
func mcpHandler(name string, tools int) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	for i := range tools {
		srv.AddTool(&mcp.Tool{
			Name:        fmt.Sprintf("tool_%d", i+1),
			Description: "a tool of the simulated fleet",
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

func hash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
