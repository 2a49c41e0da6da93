package fakefleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ManyToolsResult is a tools/list result of n tiny tools: 15,000 of them are about 700 KB, under
// a check's body cap, and decode into tens of megabytes.
func ManyToolsResult(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%d","inputSchema":{"type":"object"}}`, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// SchemaBombResult is a tools/list result of one tool whose input schema has n sub-schemas
// (empty ones: 75,000 of them are about 700 KB).
func SchemaBombResult(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"tools":[{"name":"bomb","inputSchema":{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{}`, i)
	}
	b.WriteString(`}}}]}`)
	return b.Bytes()
}

// NearBoundsResult is a tools/list result just inside a check's decode bounds: n tools of eleven JSON
// values each, with descriptions of desc bytes, and a next cursor, so that a check asks for page
// after page while its budgets allow.
func NearBoundsResult(n, desc int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	d := strings.Repeat("d", desc)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%d","description":"%s","inputSchema":{"type":"object","properties":{}}}`, i, d)
	}
	b.WriteString(`],"nextCursor":"more"}`)
	return b.Bytes()
}

// HostileMCP is an MCP server written straight on HTTP (streamable HTTP, no SDK), so that it can
// send what no SDK server would: it answers initialize, accepts the initialized notification,
// answers tools/list with toolsResult (the raw JSON of a result) and DELETE with 200. With sse,
// its answers are server-sent events rather than JSON bodies.
func HostileMCP(toolsResult []byte, sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if json.Unmarshal(body, &msg) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var result []byte
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "hostile")
			result = []byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`)
		case "tools/list":
			result = toolsResult
		default:
			if strings.HasPrefix(msg.Method, "notifications/") {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			result = []byte(`{}`)
		}
		var out bytes.Buffer
		if sse {
			out.WriteString("event: message\ndata: ")
		}
		out.WriteString(`{"jsonrpc":"2.0","id":`)
		out.Write(msg.ID)
		out.WriteString(`,"result":`)
		out.Write(result)
		out.WriteString(`}`)
		if sse {
			out.WriteString("\n\n")
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = w.Write(out.Bytes())
	})
}
