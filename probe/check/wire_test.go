package check

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closingServer redirects /n to /n+1 and, once per connection, closes a reused connection as soon
// as a second request arrives on it, without answering. It counts every request it reads.
type closingServer struct {
	ln       net.Listener
	received atomic.Int64
}

func newClosingServer(t *testing.T) *closingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &closingServer{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return s
}

func (s *closingServer) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		s.received.Add(1)
		if n == 2 {
			return // a reused connection, closed before any answer
		}
		k, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/"))
		fmt.Fprintf(conn, "HTTP/1.1 302 Found\r\nLocation: /%d\r\nContent-Length: 0\r\n\r\n", k+1)
	}
}

func (s *closingServer) url() string { return "http://" + s.ln.Addr().String() + "/0" }

// The run records exactly what the server received: a target that closes reused connections
// cannot make the transport send requests the recorder never saw, nor more than the budget.
func TestTheServerReceivesExactlyTheRequestsTheRunRecords(t *testing.T) {
	t.Parallel()
	srv := newClosingServer(t)
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.url(), Kind: "http"})
	sent := 0
	for _, q := range res.Requests {
		sent += 1 + q.Resent
	}
	assert.Equal(t, int64(sent), srv.received.Load(), "requests counted at the server = requests in the run")
	assert.LessOrEqual(t, srv.received.Load(), int64(MaxRequests))
	assert.Len(t, res.Requests, MaxRedirects+1)
	assert.Contains(t, res.Error, "stopped after 5 redirects")
}

// Even a client that would follow any number of redirects sends at most MaxRequests to such a
// target, counted where the server reads them.
func TestAtMost8RequestsReachTheServerCountedAtTheServer(t *testing.T) {
	t.Parallel()
	srv := newClosingServer(t)
	rec, client := New(Config{AllowPrivate: true}).newClient()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return nil } // follow forever
	defer client.CloseIdleConnections()
	_, err := client.Get(srv.url())
	var budget *BudgetError
	require.ErrorAs(t, err, &budget)
	assert.Equal(t, int64(MaxRequests), srv.received.Load())
	reqs, _, _ := rec.snapshot()
	assert.Len(t, reqs, MaxRequests)
}

// The connection gate holds on its own: the ninth connection of a check is never dialled.
func TestTheNinthConnectionIsNeverDialled(t *testing.T) {
	t.Parallel()
	rec := &recorder{max: MaxRequests}
	for range MaxRequests {
		require.NoError(t, rec.reserveConn("a.example:443"))
	}
	var budget *BudgetError
	require.ErrorAs(t, rec.reserveConn("a.example:443"), &budget)
	rec.releaseConn()
	require.NoError(t, rec.reserveConn("a.example:443"), "a failed dial gives its place back")
}
