package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
)

// counted serves h on loopback and counts the requests that reach it.
func counted(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func sdkServer() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "atlas", Version: "2.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "search", Description: "finds things", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// Exit 0, with no database configured at all: what the server is, each request, the tools.
func TestCheckAnMCPServerWithoutADatabase(t *testing.T) {
	t.Parallel()
	srv, hits := counted(t, sdkServer())
	res := runCLI(t, "check", srv.URL+"/mcp", "--allow-private-targets")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Regexp(t, `^ok 1 tools from atlas \(mcp\)\n`, res.Stdout)
	require.Contains(t, res.Stdout, "POST    initialize")
	require.Regexp(t, `server +atlas 2\.0\.0\n`, res.Stdout)
	require.Regexp(t, `search +[0-9a-f]{64}\n`, res.Stdout)

	res = runCLI(t, "check", srv.URL+"/mcp", "--allow-private-targets", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got check.Result
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Equal(t, check.OutcomeOK, got.Outcome)
	require.Equal(t, check.TransportStreamableHTTP, got.Transport)
	require.Equal(t, "2.0.0", got.ServerVersion)
	require.Len(t, got.ToolFingerprints, 1)
	require.LessOrEqual(t, hits.Load(), int64(2*check.MaxRequests), "two checks, each within the budget")
}

func TestCheckSignsTheObservationAsARoundWould(t *testing.T) {
	t.Parallel()
	srv, _ := counted(t, sdkServer())
	pub, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	key := t.TempDir() + "/probe.key"
	require.NoError(t, attest.WritePrivateKey(key, priv))

	res := runCLI(t, "check", srv.URL+"/mcp", "--allow-private-targets", "--signing-key", key, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Result   check.Result    `json:"result"`
		Envelope json.RawMessage `json:"envelope"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	st, err := attest.Verify(got.Envelope, map[string]ed25519.PublicKey{attest.KeyID(pub): pub})
	require.NoError(t, err)
	require.Equal(t, got.Result.ToolsFingerprint, st.Predicate.Result.ToolsFingerprint)
}

// Exit 1: the server answered, wrongly.
func TestCheckExits1WhenTheServerFails(t *testing.T) {
	t.Parallel()
	srv, _ := counted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	res := runCLI(t, "check", srv.URL+"/status", "--allow-private-targets")
	require.Equal(t, 1, res.Code, res.Stderr)
	require.Regexp(t, `^failed HTTP 503 \(http\)\n`, res.Stdout)
	require.Empty(t, res.Stderr)
}

// Exit 3: the check could not be made (nothing listens).
func TestCheckExits3WhenTheCheckCannotBeMade(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	res := runCLI(t, "check", "http://"+addr+"/mcp", "--allow-private-targets", "-o", "json")
	require.Equal(t, 3, res.Code, res.Stderr)
	var got check.Result
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Equal(t, check.OutcomeError, got.Outcome)
}

// The SSRF guard holds as in a round, and a URL it refuses is the user's input to fix: exit 2,
// nothing on stdout, nothing sent, and the error names the flag that would allow it, or says no
// flag does.
func TestCheckOfARefusedURLSaysSoAndNamesTheFlag(t *testing.T) {
	t.Parallel()
	srv, hits := counted(t, sdkServer())
	for _, output := range []string{"table", "json"} {
		res := runCLI(t, "check", srv.URL+"/mcp", "-o", output)
		require.Equal(t, 2, res.Code, res.Stdout)
		require.Empty(t, res.Stdout)
		require.Contains(t, res.Stderr, "refused: 127.0.0.1 is a loopback address")
		require.Contains(t, res.Stderr, "nothing was sent")
		require.Contains(t, res.Stderr, "--allow-private-targets")
		require.NotContains(t, res.Stderr, "answered wrongly")
	}
	require.Zero(t, hits.Load())
}

// A metadata address is refused whatever the flags; an address literal is judged without a
// lookup and never dialled. The command builds its own dialer, so the test runs in a network
// namespace of its own, where the address is a decoy on loopback: had the guard let the check
// through, it would have reached the decoy, never the real endpoint.
func TestCheckOfAMetadataAddressIsRefusedWhateverTheFlags(t *testing.T) {
	t.Parallel()
	fakefleet.InNetworkNamespace(t, fakefleet.Namespace{Decoys: []string{"168.63.129.16:80"}}, func(t *testing.T, decoys *fakefleet.Decoys) {
		res := runCLI(t, "check", "http://168.63.129.16/machine?comp=goalstate", "--allow-private-targets")
		require.Equal(t, 2, res.Code, res.Stdout)
		require.Empty(t, res.Stdout)
		require.Contains(t, res.Stderr, "refused: 168.63.129.16 is a cloud metadata address (Azure WireServer")
		require.Contains(t, res.Stderr, "no flag allows it")
		require.Zero(t, decoys.Connections(t), "nothing was sent to the metadata address")
	})
}

func TestCheckRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown kind", []string{"check", "https://a.example/", "--kind", "grpc"}, "--kind"},
		{"an unknown transport", []string{"check", "https://a.example/mcp", "--transport", "ws"}, "--transport"},
		{"a transport on http", []string{"check", "https://a.example/health", "--transport", "sse"}, "--transport"},
		{"no scheme", []string{"check", "a.example/mcp"}, "URL"},
		{"a zero timeout", []string{"check", "https://a.example/mcp", "--request-timeout", "0s"}, "--request-timeout"},
		{"a timeout past a round's bound", []string{"check", "https://a.example/mcp", "--request-timeout", "2m"}, "between 1s and 1m"},
		{"a URL longer than a round may hold", []string{"check", "https://a.example/?" + strings.Repeat("a", 2048)}, "2048-byte limit"},
		{"credentials in the URL, never echoed", []string{"check", "https://alice:S3cretPass@a.example/mcp"}, "must not carry credentials"},
		{"a missing key", []string{"check", "https://a.example/mcp", "--signing-key", "/nonexistent/key"}, "--signing-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, tc.args...)
			require.Equal(t, 2, res.Code, res.Stdout)
			require.Contains(t, res.Stderr, tc.want)
			require.NotContains(t, res.Stderr, "S3cretPass")
		})
	}
}
