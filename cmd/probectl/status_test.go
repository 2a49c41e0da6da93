package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/status/statustest"
)

// statusAt runs `probectl status` through its run function, with the clock at statustest.Now.
func statusAt(t *testing.T, url string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	io, _, out, errOut := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	t.Cleanup(f.Close)
	f.Clock = func() time.Time { return statustest.Now }
	root := newRootCmd(f)
	root.SetArgs(append([]string{"status", "--database-url", url}, args...))
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestStatusTableShowsEverySectionAndFlagsTheStaleJob(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	statustest.Seed(context.Background(), t, pool)
	out, stderr, err := statusAt(t, url)
	require.NoError(t, err)
	require.Empty(t, stderr)
	golden.Require(t, "testdata/status.table", []byte(out))
}

func TestStatusTableOfAnEmptyDatabaseSaysNone(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	out, _, err := statusAt(t, url)
	require.NoError(t, err)
	golden.Require(t, "testdata/status_empty.table", []byte(out))
}

func TestStatusJSONHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	statustest.Seed(context.Background(), t, pool)
	out, _, err := statusAt(t, url, "-o", "json")
	require.NoError(t, err)
	golden.Require(t, "testdata/status.json", []byte(out))

	var shape map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &shape))
	for _, key := range []string{"generated_at", "in_flight_window_seconds", "active_release", "due_servers",
		"open_jobs_total", "stale_jobs_total", "open_jobs", "rounds_total", "recent_rounds", "duplicates_24h"} {
		require.Contains(t, shape, key)
	}
	job := shape["open_jobs"].([]any)[0].(map[string]any)
	for _, key := range []string{"job_id", "server_id", "slug", "round_id", "invocation", "reason",
		"requested_at", "age_seconds", "stale", "server_advanced", "next_check_at"} {
		require.Contains(t, job, key)
	}
}

func TestStatusExitCodes(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"status informs and exits 0", []string{"status", "--database-url", url}, 0},
		{"an output format status lacks is bad usage", []string{"status", "--database-url", url, "-o", "csv"}, 2},
		{"an unreachable database exits 3", []string{"status", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, c.args...)
			require.Equal(t, c.code, res.Code, "stderr: %s", res.Stderr)
		})
	}
}
