package check

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpProtocolVersion is the version we ask for: the newest that still begins with initialize
// (later ones begin with server/discover), so every check makes the same handshake.
const mcpProtocolVersion = "2025-11-25"

// checkMCP connects with the official SDK over streamable HTTP (initialize, then the
// initialized notification), lists tools page by page while the budget allows, and closes the
// session (a DELETE when the server gave a session id). Every request goes through client.
func (c *Checker) checkMCP(ctx context.Context, client *http.Client, rec *recorder, t Target) (Result, error) {
	transport := &mcp.StreamableClientTransport{
		Endpoint:             t.URL,
		HTTPClient:           client,
		MaxRetries:           -1,   // a retry is a request the budget did not plan for
		DisableStandaloneSSE: true, // a hanging GET stream is no part of a check
		MaxEventSize:         int(c.cfg.MaxBodyBytes),
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "probectl", Version: c.version},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := mc.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpProtocolVersion})
	if err != nil {
		return Result{Summary: "initialize failed"}, fmt.Errorf("initialize: %w", err)
	}
	var res Result
	if init := cs.InitializeResult(); init != nil && init.ServerInfo != nil {
		res.ServerName = init.ServerInfo.Name
	}
	tools, truncated, err := listTools(ctx, cs, rec)
	// Close sends the DELETE that ends the session; its failure does not undo what was seen.
	_ = cs.Close()
	if err != nil {
		res.Summary = "tools/list failed"
		return res, fmt.Errorf("tools/list: %w", err)
	}
	res.Tools = &tools
	res.ToolsTruncated = truncated
	res.Summary = fmt.Sprintf("%d tools", tools)
	if truncated {
		res.Summary = fmt.Sprintf("at least %d tools (listing stopped at the request budget)", tools)
	}
	if res.ServerName != "" {
		res.Summary += " from " + res.ServerName
	}
	return res, nil
}

// listTools follows tools/list pagination while a page and the closing DELETE both still fit
// in the budget.
func listTools(ctx context.Context, cs *mcp.ClientSession, rec *recorder) (count int, truncated bool, err error) {
	reserve := 0
	if cs.ID() != "" {
		reserve = 1 // the DELETE that closes the session
	}
	seen := map[string]bool{}
	cursor := ""
	for {
		page, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return count, false, err
		}
		count += len(page.Tools)
		if page.NextCursor == "" {
			return count, false, nil
		}
		if seen[page.NextCursor] || rec.remaining() <= reserve {
			return count, true, nil
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
}
