package check

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcpFleet serves a real MCP server, built with the Go SDK, with n tools over streamable HTTP.
func mcpFleet(t testing.TB, name string, n int, opts *mcp.ServerOptions) *fleet {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, opts)
	for i := range n {
		srv.AddTool(&mcp.Tool{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: "a tool",
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	return newFleet(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

// A real MCP server (the official Go SDK) is checked and its tool count recorded.
func TestAnMCPServerIsCheckedAndItsToolsCounted(t *testing.T) {
	t.Parallel()
	srv := mcpFleet(t, "weather", 3, nil)

	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{Slug: "weather", URL: srv.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	require.NotNil(t, res.Tools)
	assert.Equal(t, 3, *res.Tools)
	assert.False(t, res.ToolsTruncated)
	assert.Equal(t, "weather", res.ServerName)
	assert.Equal(t, "3 tools from weather", res.Summary)
	assert.Equal(t, []string{"POST initialize", "POST notifications/initialized", "POST tools/list", "DELETE"}, rpcs(res),
		"initialize, then tools/list, then the session is closed")
	for _, r := range res.Requests {
		assert.Empty(t, r.Error)
		assert.Positive(t, r.LatencySeconds)
		assert.Less(t, r.Status, 300)
	}
	assert.Equal(t, int64(len(res.Requests)), srv.Hits(), "every request the server saw is recorded")
	for _, r := range srv.Requests() {
		assert.Contains(t, r.Header.Get("User-Agent"), "probectl/")
	}
}

// A server whose tools/list never ends is listed only while the budget lasts, and the session
// is still closed within it.
func TestEndlessToolsPaginationStopsAtTheRequestBudget(t *testing.T) {
	t.Parallel()
	srv := mcpFleet(t, "many", 50, &mcp.ServerOptions{PageSize: 1})

	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	assert.True(t, res.ToolsTruncated)
	require.NotNil(t, res.Tools)
	assert.Equal(t, 5, *res.Tools, "one tool per page, five pages fit beside initialize, initialized and DELETE")
	assert.Len(t, res.Requests, MaxRequests)
	assert.Equal(t, "DELETE", res.Requests[MaxRequests-1].Method, "the budget keeps room to close the session")
	assert.Equal(t, int64(MaxRequests), srv.Hits())
	assert.Zero(t, res.RefusedRequests)
}

func TestAnMCPServerThatFailsInitializeIsFailed(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "mcp"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Error, "initialize")
	assert.Equal(t, "initialize failed", res.Summary)
	assert.LessOrEqual(t, srv.Hits(), int64(MaxRequests))
}

func TestAPlainWebPageIsNotAnMCPServer(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "mcp"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.NotEmpty(t, res.Error)
	assert.Nil(t, res.Tools)
}

func mcpFleetB(b *testing.B, n int) *fleet { return mcpFleet(b, "bench", n, nil) }

func TestAnMCPServerWhoseToolListIsTooLargeIsFailed(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", Description: strings.Repeat("x", 4096), InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	f := newFleet(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))

	res := New(Config{AllowPrivate: true, MaxBodyBytes: 2048}).Check(context.Background(), Target{URL: f.URL, Kind: "mcp"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Equal(t, "response too large", res.Summary)
	assert.Contains(t, res.Error, "larger than the 2048-byte cap")
	assert.LessOrEqual(t, len(res.Requests), MaxRequests)
}

func TestAnMCPServerThatNeverAnswersIsAnError(t *testing.T) {
	t.Parallel()
	f := newFleet(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the POST body first: only then does the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	res := New(Config{AllowPrivate: true, RequestTimeout: 150 * time.Millisecond}).
		Check(context.Background(), Target{URL: f.URL, Kind: "mcp"})
	assert.Equal(t, OutcomeError, res.Outcome)
	assert.Equal(t, "timed out", res.Summary)
	assert.Contains(t, res.Error, "timed out after 150ms")
}
