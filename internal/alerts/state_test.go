package alerts_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestAServerGoesDownAfterTwoFailedChecksAndRecoversAfterOneOK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})

	ok1 := finish(ctx, t, pool, 0, srv, "ok", nil)
	require.Empty(t, events(ctx, t, pool), "unknown to up is not news")
	require.Equal(t, "up", state(ctx, t, pool, "weather").State)

	f1 := finish(ctx, t, pool, 0, srv, "failed", nil)
	require.Empty(t, events(ctx, t, pool), "one failure is below down_after")
	f2 := finish(ctx, t, pool, 0, srv, "error", nil)
	f3 := finish(ctx, t, pool, 0, srv, "failed", nil)
	ok2 := finish(ctx, t, pool, 0, srv, "ok", nil)
	ok3 := finish(ctx, t, pool, 0, srv, "ok", nil)
	_ = ok1
	_ = f3
	_ = ok3
	require.Equal(t, []eventRow{
		{Type: "server.down", Server: "weather", State: "down", Previous: "up", Runs: []int64{f1, f2}, Resolved: true},
		{Type: "server.recovered", Server: "weather", State: "up", Previous: "down", Runs: []int64{ok2}},
	}, events(ctx, t, pool))
	require.Equal(t, "up", state(ctx, t, pool, "weather").State)
}

func TestAFirstCheckThatFailsTwiceGoesFromUnknownToDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "new"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	require.Equal(t, "unknown", state(ctx, t, pool, "new").State)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "unknown", ev[0].Previous)
}

func TestRunsAtProbectlsFaultCountForNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "fenced"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	for range 3 {
		finish(ctx, t, pool, 0, srv, "error", map[string]any{"fault": "probectl"})
		finish(ctx, t, pool, 0, srv, "error", map[string]any{"summary": "interrupted"})
	}
	require.Empty(t, events(ctx, t, pool))
	require.Equal(t, 0, state(ctx, t, pool, "fenced").ConsecutiveFailed)
}

func TestToolsAndAuthChangesAreEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "tools", Kind: "mcp"})
	a, b := "aa"+repeat("0", 62), "bb"+repeat("0", 62)
	finish(ctx, t, pool, 0, srv, "ok", map[string]any{"tools_fingerprint": a, "server_version": "1.0"})
	finish(ctx, t, pool, 0, srv, "ok", map[string]any{"tools_fingerprint": a, "server_version": "1.0"})
	require.Empty(t, events(ctx, t, pool))
	r3 := finish(ctx, t, pool, 0, srv, "ok", map[string]any{"tools_fingerprint": b, "server_version": "1.0"})
	r4 := finish(ctx, t, pool, 0, srv, "ok", map[string]any{"tools_fingerprint": b, "server_version": "1.0", "auth": "required"})
	require.Equal(t, []eventRow{
		{Type: "server.tools_changed", Server: "tools", State: "up", Previous: "up", Runs: []int64{r3}},
		{Type: "server.auth_changed", Server: "tools", State: "up", Previous: "up", Runs: []int64{r4}},
	}, events(ctx, t, pool))
	var bump bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT (data->>'changed_without_version_bump')::boolean FROM alert_events
		WHERE type = 'server.tools_changed'`).Scan(&bump))
	require.True(t, bump, "the same server version with other tools is flagged as audit tools does")
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// The two-write finish (advance first, then FinishJob) stores its run by another statement than
// probe_finish: the trigger judges it all the same.
func TestTheTwoWriteFinishProducesTheSameEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "twowrite"})
	for range 2 {
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv})
		now := time.Now().UTC()
		_, err := queries.FinishJob(ctx, pool, queries.FinishParams{JobID: job, ServerID: srv, Outcome: "failed",
			StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: []byte(`{"outcome":"failed"}`)})
		require.NoError(t, err)
	}
	ev := events(ctx, t, pool)
	require.Len(t, ev, 1)
	require.Equal(t, "server.down", ev[0].Type)
}
