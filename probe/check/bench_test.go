package check

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

// A hostile target redirects every request to itself with a 60 KB query string ("?" + 60 KB,
// a new one each time). What matters is the CPU one check costs probectl, reported as cpu-ms/check
// (user + system time of the whole process, over the loop: the server's share included, which
// only makes the figure pessimistic).
func BenchmarkCheckHostileRedirect(b *testing.B) {
	var n atomic.Int64
	srv := newFleet(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := strings.Repeat("a&", 30<<10) + strconv.FormatInt(n.Add(1), 10)
		http.Redirect(w, r, "/next?"+q, http.StatusFound)
	}))
	c := New(Config{AllowPrivate: true})
	target := Target{URL: srv.URL, Kind: "http"}
	before := cpuTime(b)
	for b.Loop() {
		if res := c.Check(context.Background(), target); res.Outcome == OutcomeOK {
			b.Fatal("a redirect loop passed")
		}
	}
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/1000/float64(b.N), "cpu-ms/check")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
