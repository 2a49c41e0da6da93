package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
)

func TestServeAnswersEveryRouteAndStopsWhenInterrupted(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	statustest.Seed(context.Background(), t, pool)

	streams, _, _, errOut := testStreams()
	f := newFactory(streams, func(string) string { return "" }, buildInfo{Version: "test"})
	t.Cleanup(f.Close)
	f.Clock = func() time.Time { return statustest.Now }
	f.DatabaseURL = url
	addrs := make(chan net.Addr, 1)
	opts := &serveOptions{f: f, Addr: "127.0.0.1:0", ReadTimeout: 10 * time.Second,
		ready: func(a net.Addr) { addrs <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- runServe(ctx, opts) }()
	base := "http://" + (<-addrs).String()

	cases := []struct{ path, contentType, contains string }{
		{"/status", "text/html; charset=utf-8", statustest.BetweenWrites},
		{"/zh/status", "text/html; charset=utf-8", "已推后、未结束"},
		{"/status.json", "application/json", `"slug": "` + statustest.Stale + `"`},
		{"/metrics", "text/plain; version=0.0.4; charset=utf-8", "probectl_stale_jobs 1"},
		{"/healthz", "text/plain; charset=utf-8", "ok"},
	}
	for _, c := range cases {
		res, err := http.Get(base + c.path)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, c.path)
		require.Equal(t, c.contentType, res.Header.Get("Content-Type"), c.path)
		require.Contains(t, string(body), c.contains, c.path)
	}

	cancel()
	require.NoError(t, <-served)
	logs := errOut.String()
	require.Contains(t, logs, "serving the status page")
	require.Contains(t, logs, "path=/zh/status status=200")
	require.Contains(t, logs, "shutting down")
	require.NotContains(t, logs, "beyond loopback")
}

func TestServeRefusesBadFlagsBeforeConnecting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"an address without a port", []string{"serve", "--addr", "127.0.0.1"}, "--addr"},
		{"a read timeout of zero", []string{"serve", "--read-timeout", "0s"}, "--read-timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// No database is configured: a usage error must come before any attempt to connect.
			res := runCLI(t, c.args...)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, c.says)
		})
	}
}

func TestServeExits3WhenTheAddressIsTaken(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	res := runCLI(t, "serve", "--database-url", url, "--addr", ln.Addr().String())
	require.Equal(t, 3, res.Code)
	require.True(t, strings.Contains(res.Stderr, "listen on "+ln.Addr().String()), res.Stderr)
}
