package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/testfactory"
)

// TestTablesFitTheTerminal runs servers list on a terminal 60 columns wide: no line is wider,
// and nothing is cut off (a single value wider than the terminal, a long URL, stays whole so that
// it can be copied). In a pipe the same table keeps one row per line.
func TestTablesFitTheTerminal(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	testfactory.Server(context.Background(), t, pool, &testfactory.ServerOpts{Slug: "weather",
		URL: "https://weather.example/mcp/endpoint/v1"})

	io, _, out, errOut := testStreams()
	io.Out, io.OutTTY = render.WithWidth(out, 60), true
	code := Execute(context.Background(), []string{"--database-url", url, "--no-color", "servers", "list"}, io, func(string) string { return "" })
	require.Equal(t, 0, code, errOut.String())
	for _, line := range lines(out.String()) {
		assert.LessOrEqual(t, len(line), 60, "%q is wider than the terminal", line)
	}
	assert.Contains(t, out.String(), "https://weather.example/mcp/endpoint/v1")

	res := runCLI(t, "--database-url", url, "servers", "list")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Len(t, lines(res.Stdout), 2)
	assert.Greater(t, len(strings.Split(res.Stdout, "\n")[1]), 60)
}
