package check

import (
	"context"
	"fmt"
	"testing"
)

// What fingerprinting costs a check, side by side: 3, 100 and 10,000 tools (the last stops at the
// request budget, 5,000 listed, the first 1,000 fingerprinted). Run with -benchmem for memory.
func BenchmarkCheckMCPTools(b *testing.B) {
	for _, n := range []int{3, 100, 10_000} {
		b.Run(fmt.Sprintf("%d_tools", n), func(b *testing.B) {
			srv := mcpFleet(b, "bench", n, nil)
			c := New(Config{AllowPrivate: true})
			target := Target{URL: srv.URL, Kind: "mcp"}
			b.ReportAllocs()
			for b.Loop() {
				if res := c.Check(context.Background(), target); res.Outcome != OutcomeOK {
					b.Fatal(res.Error)
				}
			}
		})
	}
}
