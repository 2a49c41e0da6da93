package check

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
)

// readConn counts what the client reads of a connection and says once when it passed at.
type readConn struct {
	net.Conn
	n    atomic.Int64
	at   int64
	once sync.Once
	past chan<- struct{}
}

func (c *readConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.n.Add(int64(n)) >= c.at {
		c.once.Do(func() { c.past <- struct{}{} })
	}
	return n, err
}

// Servers that send a large answer's first 96 KiB and then nothing (the slowest trickle) hold no
// decode slot while the check waits for the rest: as many of them as there are slots, each well
// past largeAnswer, do not make an honest server's large answer wait, and its check is not
// blamed. Reading the network held a slot once a body passed 64 KiB, for a whole request timeout,
// and an honest check that waited longer than its own timeout was recorded as the server's.
func TestSlowServersHoldNoDecodeSlot(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse %v", sse), func(t *testing.T) { slowServersHoldNoSlot(t, sse) })
	}
}

func slowServersHoldNoSlot(t *testing.T, sse bool) {
	t.Parallel()
	stop := make(chan struct{})
	trickle := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: ")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"padding":"%s`, strings.Repeat("a", 96<<10))
		w.(http.Flusher).Flush()
		select { // the rest never comes, until the test ends
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	honest := newFleet(t, fakefleet.HostileMCP(fakefleet.NearBoundsResult(200, 400), false))
	require.Greater(t, len(fakefleet.NearBoundsResult(200, 400)), largeAnswer, "the honest answer is large")

	slots := NewDecodeSlots()
	slow := New(Config{AllowPrivate: true, RequestTimeout: time.Minute, DecodeSlots: slots})
	past := make(chan struct{}, MaxLargeDecodes)
	var d net.Dialer
	slow.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &readConn{Conn: conn, at: 90 << 10, past: past}, nil
	}
	var wg sync.WaitGroup
	for range MaxLargeDecodes {
		wg.Go(func() { slow.Check(context.Background(), Target{URL: trickle.URL, Kind: "mcp"}) })
	}
	for range MaxLargeDecodes {
		<-past // each slow check has read 90 KiB: past largeAnswer, waiting for the rest
	}
	fast := New(Config{AllowPrivate: true, RequestTimeout: 2 * time.Second, DecodeSlots: slots})
	res := fast.Check(context.Background(), Target{URL: honest.URL, Kind: "mcp"})
	assert.Equal(t, OutcomeOK, res.Outcome, "%s: %s", res.Summary, res.Error)
	close(stop)
	wg.Wait()
	assert.Empty(t, slots.ch, "every slot is free once the checks ended")
}
