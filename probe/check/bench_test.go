package check

import (
	"context"
	"net/http"
	"testing"
)

// The cost of one check against a loopback server: what a round's concurrency buys.
func BenchmarkCheckHTTP(b *testing.B) {
	srv := newFleet(b, http.HandlerFunc(ok))
	c := New(Config{AllowPrivate: true})
	target := Target{URL: srv.URL, Kind: "http"}
	for b.Loop() {
		if res := c.Check(context.Background(), target); res.Outcome != OutcomeOK {
			b.Fatal(res.Error)
		}
	}
}

func BenchmarkCheckMCP(b *testing.B) {
	srv := mcpFleetB(b, 3)
	c := New(Config{AllowPrivate: true})
	target := Target{URL: srv.URL, Kind: "mcp"}
	for b.Loop() {
		if res := c.Check(context.Background(), target); res.Outcome != OutcomeOK {
			b.Fatal(res.Error)
		}
	}
}
