package check

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpProtocolVersion is the version we ask for: the newest that still begins with initialize
// (later ones begin with server/discover), so every check makes the same handshake.
const mcpProtocolVersion = "2025-11-25"

// MCP transports, as the official registry names a remote's type.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// checkMCP connects with the official SDK over the server's transport (initialize, then the
// initialized notification), records what the server said it is, lists tools page by page
// while the budget allows (then resources and prompts, when declared and the budget still
// allows), and closes the session. A streamable-http server whose initialize gets 400, 404 or
// 405 is tried again over SSE at the same URL, as the spec's backwards-compatibility rule says.
// Every request goes through client.
func (c *Checker) checkMCP(ctx context.Context, client *http.Client, rec *recorder, t Target) (Result, error) {
	transport := t.Transport
	if transport == "" {
		transport = TransportStreamableHTTP
	}
	rec.shape = &shapeBudget{} // every answer's structure is bounded before the SDK decodes it
	rec.gate = &decodeGate{slots: c.decodes}
	defer rec.gate.close()
	watch := &wireWatch{next: client.Transport}
	client = &http.Client{Transport: watch, CheckRedirect: client.CheckRedirect}
	cs, used, err := c.connectMCP(ctx, client, rec, watch, t.URL, transport)
	rec.gate.release() // what initialize answered is decoded
	if err != nil {
		return c.connectFailed(ctx, client, watch, t, used, err)
	}
	res := Result{Transport: used}
	describeServer(&res, cs.InitializeResult())

	reserve := 0
	if cs.ID() != "" {
		reserve = 1 // the DELETE that closes the session
	}
	var tools toolSet
	stopped, err := pages(ctx, rec, reserve, func(cursor string) (string, error) {
		page, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			rec.gate.release()
			return "", err
		}
		tools.add(page.Tools)
		rec.gate.release()
		return page.NextCursor, nil
	})
	if err != nil {
		_ = cs.Close()
		res.Summary = "tools/list failed"
		return res, fmt.Errorf("tools/list: %w", err)
	}
	res.Tools = &tools.count
	truncated := stopped != ""
	res.ToolsTruncated = truncated || tools.capped
	res.ToolFingerprints, res.ToolsFingerprint = tools.list()
	res.ToolDefinitions, res.ToolDefinitionsCut = tools.defs, len(tools.cut)
	res.ToolNamesCut = tools.namesCut
	c.countOthers(ctx, cs, rec, reserve, &res)
	// Close sends the DELETE that ends the session; its failure does not undo what was seen.
	_ = cs.Close()

	res.Summary = fmt.Sprintf("%d tools", tools.count)
	if res.ToolsTruncated {
		res.Summary = fmt.Sprintf("at least %d tools (listing stopped at the %s)", tools.count, stopped)
		if !truncated {
			res.Summary = fmt.Sprintf("%d tools (the first %d fingerprinted)", tools.count, MaxToolsFingerprinted)
		}
	}
	if res.ServerName != "" {
		res.Summary += " from " + res.ServerName
	}
	if used != transport {
		res.Summary += " (over " + used + ")"
	}
	return res, nil
}

// connectMCP opens a session over transport; over streamable-http, an initialize answered 400,
// 404 or 405 is retried over SSE. It says which transport it ended on.
func (c *Checker) connectMCP(ctx context.Context, client *http.Client, rec *recorder, watch *wireWatch, endpoint, transport string) (*mcp.ClientSession, string, error) {
	mc := mcp.NewClient(&mcp.Implementation{Name: "probectl", Version: c.version},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	opts := &mcp.ClientSessionOptions{ProtocolVersion: mcpProtocolVersion}
	if transport == TransportSSE {
		cs, err := mc.Connect(ctx, c.sseTransport(client, watch, endpoint), opts)
		return cs, TransportSSE, err
	}
	st := &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           client,
		MaxRetries:           -1,   // a retry is a request the budget did not plan for
		DisableStandaloneSSE: true, // a hanging GET stream is no part of a check
		MaxEventSize:         int(c.cfg.MaxBodyBytes),
	}
	cs, err := mc.Connect(ctx, st, opts)
	if err == nil {
		return cs, TransportStreamableHTTP, nil
	}
	switch initializeStatus(rec) {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		cs, err = mc.Connect(ctx, c.sseTransport(client, watch, endpoint), opts)
		return cs, TransportSSE, err
	}
	return nil, TransportStreamableHTTP, err
}

// initializeStatus is the HTTP status of the last initialize POST sent, 0 if none was answered.
func initializeStatus(rec *recorder) int {
	reqs, _, _ := rec.snapshot()
	for _, q := range slices.Backward(reqs) {
		if q.RPC == "initialize" {
			return q.Status
		}
	}
	return 0
}

// connectFailed explains a session that could not be opened: an SSE endpoint on another
// origin, an authorization the server requires (see auth.go), or the SDK's error.
func (c *Checker) connectFailed(ctx context.Context, client *http.Client, watch *wireWatch, t Target, used string, err error) (Result, error) {
	if origin := watch.originRefused(); origin != nil {
		// Unwrapped: the HTTP client's wrapping would make it look like a network error.
		return Result{Transport: used, Summary: origin.summary()}, origin
	}
	if seen, www := watch.challenge(); seen {
		res, aerr := checkAuth(ctx, client, t.URL, www, c.cfg.AllowPrivate)
		res.Transport = used
		return res, aerr
	}
	return Result{Transport: used, Summary: "initialize failed"}, fmt.Errorf("initialize: %w", err)
}

// describeServer records what the server said it is in its initialize result.
func describeServer(res *Result, init *mcp.InitializeResult) {
	if init == nil {
		return
	}
	res.ProtocolVersion = init.ProtocolVersion
	if si := init.ServerInfo; si != nil {
		res.ServerName, res.ServerVersion, res.ServerTitle = si.Name, si.Version, si.Title
	}
	res.Capabilities = []string{}
	if init.Capabilities != nil {
		if raw, err := json.Marshal(init.Capabilities); err == nil {
			var caps map[string]json.RawMessage
			if json.Unmarshal(raw, &caps) == nil {
				for name := range caps {
					res.Capabilities = append(res.Capabilities, name)
				}
			}
		}
		slices.Sort(res.Capabilities)
	}
	res.Instructions = &Instructions{Present: init.Instructions != "", Length: len(init.Instructions)}
}

// countOthers counts resources and prompts when the server declared them and the budget still
// has room after the tools; a count the budget cut short is left out.
func (c *Checker) countOthers(ctx context.Context, cs *mcp.ClientSession, rec *recorder, reserve int, res *Result) {
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		return
	}
	count := func(list func(cursor string) (int, string, error)) *int {
		if rec.remaining() <= reserve {
			return nil
		}
		n := 0
		stopped, err := pages(ctx, rec, reserve, func(cursor string) (string, error) {
			k, next, err := list(cursor)
			n += k
			return next, err
		})
		if err != nil || stopped != "" {
			return nil
		}
		return &n
	}
	if caps.Resources != nil {
		res.Resources = count(func(cursor string) (int, string, error) {
			p, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			rec.gate.release()
			if err != nil {
				return 0, "", err
			}
			return len(p.Resources), p.NextCursor, nil
		})
	}
	if caps.Prompts != nil {
		res.Prompts = count(func(cursor string) (int, string, error) {
			p, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			rec.gate.release()
			if err != nil {
				return 0, "", err
			}
			return len(p.Prompts), p.NextCursor, nil
		})
	}
}

// pages follows a paginated list while a page and the reserved requests both still fit in the
// request budget, and a page of the most a message may hold still fits in the check's decode
// budget; stopped says which budget left pages unread ("" when none was left).
func pages(ctx context.Context, rec *recorder, reserve int, page func(cursor string) (string, error)) (stopped string, err error) {
	seen := map[string]bool{}
	cursor := ""
	for {
		next, err := page(cursor)
		if err != nil {
			return "", err
		}
		if next == "" {
			return "", nil
		}
		if seen[next] || rec.remaining() <= reserve || ctx.Err() != nil {
			return "request budget", nil
		}
		if rec.shape.left() < MaxMessageValues {
			return "decode budget", nil
		}
		seen[next] = true
		cursor = next
	}
}
