package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// A server whose newest run met a bearer challenge: 'servers show' says its tools are not
// verified, and -o json gives auth "required" with tools null, not an older run's count.
func TestServersShowSaysAuthRequiredToolsNotVerified(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := t.Context()
	locked := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "locked", Kind: "mcp"})
	base := time.Now().UTC().Add(-3 * time.Hour)
	for i, result := range []map[string]any{
		{"outcome": "ok", "summary": "initialize, tools/list", "tools": 7, "requests": []any{}},
		{"outcome": "ok", "summary": "auth required", "auth": "required", "requests": []any{}},
	} {
		started := base.Add(time.Duration(i) * time.Hour)
		finished := started.Add(time.Second)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: locked, RequestedAt: &started, FinishedAt: &finished, Outcome: "ok"})
		data, err := json.Marshal(result)
		require.NoError(t, err)
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: locked, StartedAt: &started, FinishedAt: &finished, Result: data})
	}

	res := runCLI(t, "--database-url", url, "servers", "show", "locked")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "auth required, tools not verified")
	assert.NotContains(t, res.Stdout, "7, since")

	res = runCLI(t, "--database-url", url, "servers", "show", "locked", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, "required", got["auth"])
	assert.Nil(t, got["tools"], "an older run's count is not presented as current")
}
