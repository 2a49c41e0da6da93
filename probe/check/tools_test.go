package check

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool's name is the server's choice: one longer than MaxToolNameBytes is recorded cut to it,
// ending in "…", and counted; its fingerprint is still its whole definition's.
func TestALongToolNameIsCutAndCounted(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "long names", Version: "1"}, nil)
	for _, name := range []string{"short", strings.Repeat("a", 1024), strings.Repeat("a", 1023) + "b", strings.Repeat("é", 100)} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	fleet := newFleet(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	res := New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: fleet.URL, Kind: "mcp"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	require.Len(t, res.ToolFingerprints, 4)
	assert.Equal(t, 3, res.ToolNamesCut)
	fps := map[string]bool{}
	for _, p := range res.ToolFingerprints {
		assert.LessOrEqual(t, len(p.Name), MaxToolNameBytes, p.Name)
		assert.True(t, utf8.ValidString(p.Name))
		if p.Name != "short" {
			assert.True(t, strings.HasSuffix(p.Name, "…"), p.Name)
		}
		fps[p.Fingerprint] = true
	}
	assert.Len(t, fps, 4, "two names cut alike keep their own fingerprints")
}
