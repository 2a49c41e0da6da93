package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// hostile is what a probed server may choose to send as its name, version, title, a tool's name
// or description, or an error's message: an OSC title change, an erase-line and a carriage return
// that overwrite the line with a forged "ok", a cursor move up, C1 controls (CSI, NEL), bidi
// overrides and isolates, a bell, a zero-width space, DEL (which encoding/json writes raw), a
// newline and a format character outside the BMP (a language tag).
const hostile = "\x1b]0;owned\x07\x1b[2K\rok 12 tools from weather\x1b[1A\u009b2J\u0085" +
	"\u202egnp.exe\u202c \u2066iso\u2069 \x07\u200b!\x7f\nnext\U000E0001"

// requireNoRawControl fails when s holds a rune a terminal would obey or hide: what the sanitizer
// must have written as a visible escape. Newline and tab are probectl's own layout.
func requireNoRawControl(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		bad := r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f ||
			(r >= 0x80 && r <= 0x9f) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r)
		if bad {
			from := max(0, i-30)
			t.Errorf("%s: raw %U at byte %d: %q", what, r, i, s[from:min(len(s), i+30)])
			return
		}
	}
}

// hostileMCP is a real MCP server (the official SDK) whose every self-description is hostile.
func hostileMCP(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather" + hostile, Title: hostile, Version: "1.0" + hostile},
		&mcp.ServerOptions{Instructions: hostile})
	srv.AddTool(&mcp.Tool{Name: "search" + hostile, Description: hostile, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	h, _ := counted(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	return h.URL + "/mcp"
}

// failingMCP answers every JSON-RPC request with an error whose message is hostile: the error body a
// failed check reports.
func failingMCP(t *testing.T) string {
	t.Helper()
	h, _ := counted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &req)
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		msg, _ := json.Marshal(hostile)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, req.ID, msg)
	}))
	return h.URL + "/mcp"
}

// plantHostileToolDrift stores two runs of "drift" whose hostile tool changed its hostile
// description under the same hostile version: what audit tools reports.
func plantHostileToolDrift(t *testing.T, pool queries.DBTX) {
	t.Helper()
	ctx := context.Background()
	id := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "drift", Kind: "mcp"})
	fps := []string{strings.Repeat("3", 64), strings.Repeat("4", 64)}
	for i, fp := range fps {
		def, err := json.Marshal(map[string]string{"name": "=cmd|' /C calc'!A0" + hostile, "description": hostile + strconv.Itoa(i)})
		require.NoError(t, err)
		_, err = queries.StoreTools(ctx, pool, queries.StoreToolsParams{ListFingerprint: fp,
			List: json.RawMessage(`[]`), Definitions: map[string]json.RawMessage{fp: def}})
		require.NoError(t, err)
	}
	at := time.Now().Add(-time.Hour)
	for i, fp := range fps {
		when := at.Add(time.Duration(i) * time.Minute)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: id, RequestedAt: &when, FinishedAt: &when})
		result, err := json.Marshal(map[string]any{"outcome": "ok", "server_version": "@SUM(1+1)" + hostile,
			"tools_fingerprint": fp, "tool_fingerprints": []map[string]string{{"name": "=cmd|' /C calc'!A0" + hostile, "fingerprint": fp}}})
		require.NoError(t, err)
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: id, FinishedAt: &when, Result: result})
	}
}

// The same hostile text, sent by real servers or stored as they would have sent it, goes through
// every command that prints server text, as a table, as text and as CSV: none lets a raw control,
// C1 or bidi character reach stdout or stderr. JSON is the control: it carries the text, escaped.
func TestServerChosenTextNeverReachesTheTerminalRaw(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ok, bad := hostileMCP(t), failingMCP(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "evil-ok", Kind: "mcp", URL: ok, NextCheckAt: &past})
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "evil-fail", Kind: "mcp", URL: bad, NextCheckAt: &past})
	plantHostileToolDrift(t, pool)

	seen := func(what string, res cliResult) {
		t.Helper()
		requireNoRawControl(t, what+" stdout", res.Stdout)
		requireNoRawControl(t, what+" stderr", res.Stderr)
	}
	// JSON output passes through the same guarded stream: what it escapes must stay valid JSON
	// that means the same text.
	seenJSON := func(what string, res cliResult) {
		t.Helper()
		seen(what, res)
		assert.True(t, json.Valid([]byte(res.Stdout)), "%s: not valid JSON: %s", what, res.Stdout)
	}
	for _, target := range []string{ok, bad} {
		res := runCLI(t, "check", target, "--allow-private-targets")
		seen("check "+target, res)
		assert.Contains(t, res.Stdout+res.Stderr, `\u001b`, "the escape is shown, not obeyed")
		seenJSON("check -o json "+target, runCLI(t, "check", target, "--allow-private-targets", "-o", "json"))
	}
	round := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
		"--fanout", "0", "--claim-limit", "5")
	seen("run round", round)
	require.Contains(t, round.Stdout, "evil-fail", "the round lists its failure")
	assert.Contains(t, round.Stdout, `\u202e`)

	runs := runCLI(t, "--database-url", url, "runs", "list")
	require.Equal(t, 0, runs.Code, runs.Stderr)
	seen("runs list", runs)
	seen("runs list -o csv", runCLI(t, "--database-url", url, "runs", "list", "-o", "csv"))
	var list []struct {
		ID int64 `json:"id"`
	}
	js := runCLI(t, "--database-url", url, "runs", "list", "-o", "json")
	seenJSON("runs list -o json", js)
	require.NoError(t, json.Unmarshal([]byte(js.Stdout), &list), js.Stdout)
	require.NotEmpty(t, list)
	for _, r := range list {
		seen(fmt.Sprintf("runs show %d", r.ID), runCLI(t, "--database-url", url, "runs", "show", strconv.FormatInt(r.ID, 10)))
		seenJSON(fmt.Sprintf("runs show %d -o json", r.ID), runCLI(t, "--database-url", url, "runs", "show", strconv.FormatInt(r.ID, 10), "-o", "json"))
	}
	for _, slug := range []string{"evil-ok", "evil-fail", "drift"} {
		show := runCLI(t, "--database-url", url, "servers", "show", slug)
		require.Equal(t, 0, show.Code, show.Stderr)
		seen("servers show "+slug, show)
		seenJSON("servers show -o json "+slug, runCLI(t, "--database-url", url, "servers", "show", slug, "-o", "json"))
	}
	seen("servers list", runCLI(t, "--database-url", url, "servers", "list"))

	tools := runCLI(t, "--database-url", url, "audit", "tools", "--since", "2h", "--diff")
	seen("audit tools", tools)
	assert.Contains(t, tools.Stdout, `\u001b]0;owned`, "the VERSION column and the diff show the escapes")
	csv := runCLI(t, "--database-url", url, "audit", "tools", "--since", "2h", "-o", "csv")
	seen("audit tools -o csv", csv)
	assert.Contains(t, csv.Stdout, `'=cmd|`, "a formula in a spreadsheet cell is defused")
	assert.Contains(t, csv.Stdout, `'@SUM(1+1)`)

	asJSON := runCLI(t, "--database-url", url, "audit", "tools", "--since", "2h", "--diff", "-o", "json")
	seenJSON("audit tools -o json", asJSON)
	assert.Contains(t, asJSON.Stdout, `\u001b]0;owned`, "JSON carries the text, escaped by encoding/json")
	// The guard writes C1 and format characters as \uXXXX, JSON's own escape: the JSON means the same.
	var report struct {
		Changes []struct {
			VersionAfter string `json:"version_after"`
		} `json:"changes"`
	}
	require.NoError(t, json.Unmarshal([]byte(asJSON.Stdout), &report), asJSON.Stdout)
	require.Len(t, report.Changes, 1)
	assert.Equal(t, "@SUM(1+1)"+hostile, report.Changes[0].VersionAfter, "JSON keeps the server's exact text")
}
