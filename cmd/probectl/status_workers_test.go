package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/internal/status/statustest"
)

// status shows the workers (alive, dead, stopped, the leader, what each runs and what waits in
// its spool) and probectl's invocations in River's queue, read from any machine.
func TestStatusShowsTheWorkersAndTheirQueue(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	statustest.SeedWorkers(context.Background(), t, pool)
	out, stderr, err := statusAt(t, url)
	require.NoError(t, err)
	require.Empty(t, stderr)
	golden.Require(t, "testdata/status_workers.table", []byte(out))

	out, _, err = statusAt(t, url, "-o", "json")
	require.NoError(t, err)
	var got struct {
		Workers []map[string]any `json:"workers"`
		Queue   map[string]any   `json:"queue"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, map[string]any{"waiting": 2.0, "running": 1.0, "retrying": 1.0, "retried_24h": 3.0,
		"discarded_24h": 1.0}, got.Queue)
	require.Len(t, got.Workers, 4)
	first := got.Workers[0]
	require.Equal(t, map[string]any{"id": statustest.LeaderWorker, "host": "web-1", "pid": 101.0, "version": "v1.4.0",
		"alive": true, "leader": true, "invocations_running": 3.0, "max_workers": 10.0, "spool_files": 0.0,
		"spool_results": 0.0, "spool_set_aside": 0.0, "started_at": "2026-10-07T19:00:00Z", "heartbeat_at": "2026-10-07T20:59:55Z",
		"stopped_at": nil}, first)
	alive := map[string]bool{}
	for _, w := range got.Workers {
		alive[w["id"].(string)] = w["alive"].(bool)
	}
	require.Equal(t, map[string]bool{statustest.LeaderWorker: true, statustest.SpoolWorker: true,
		statustest.DeadWorker: false, statustest.StoppedWorker: false}, alive)
	require.Equal(t, 1.0, got.Workers[1]["spool_set_aside"], "%v", got.Workers[1])
}

// On a terminal the workers' coloured cells (dead, stopped, what waits or is set aside in a
// spool) are coloured, not shown as the escapes of their colour codes: the table shows a string's
// control characters as escapes, so they are cells the table styles itself.
func TestTheWorkersTableColoursItsCellsOnATerminal(t *testing.T) {
	t.Parallel()
	colour := lipgloss.NewRenderer(io.Discard)
	colour.SetColorProfile(termenv.ANSI)
	red := colour.NewStyle().Foreground(lipgloss.Color("1"))
	st := render.Styles{Title: red, Pass: red, Fail: red, Warn: red, Muted: red}
	stopped := statustest.Now
	r := &status.Report{Queue: &status.Queue{}, Workers: []status.Worker{
		{ID: "w-1", HeartbeatAt: stopped, StoppedAt: &stopped},
		{ID: "w-2", HeartbeatAt: stopped, SpoolFiles: 1, SpoolResults: 2, SpoolSetAside: 1},
	}}
	var out bytes.Buffer
	p := &statusPrinter{w: &out}
	writeWorkers(p, &render.Streams{Out: &out, ErrOut: &out, OutTTY: true}, st, r)
	require.NoError(t, p.err)
	require.NotContains(t, out.String(), `\u001b`, "no colour code shown as its escape:\n%s", out.String())
	for _, cell := range []string{"dead", "stopped", "2 in 1 file(s)", "1 set aside"} {
		require.Contains(t, out.String(), red.Render(cell), "%q is coloured", cell)
	}
}
