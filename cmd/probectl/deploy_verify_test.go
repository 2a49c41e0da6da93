package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/release"
)

// plantIncident plants the incident's first two rounds after the 20:53 deploy, in small: each
// round claims two servers twice, a fraction of a second after their first job finished.
func plantIncident(t *testing.T) string {
	t.Helper()
	url, pool := migratedDB(t)
	_, v2 := incident(t, pool)
	fl := newFleet(t, pool, 6)
	fl.round(v2, time.Date(2026, 10, 7, 20, 55, 0, 0, time.UTC), []int{0, 0, 1, 1, 2},
		map[int]time.Duration{1: 168 * time.Millisecond, 3: 236 * time.Millisecond})
	fl.round(v2, time.Date(2026, 10, 7, 21, 0, 0, 0, time.UTC), []int{3, 3, 4, 4, 5},
		map[int]time.Duration{1: 118 * time.Millisecond, 3: 112 * time.Millisecond})
	return url
}

func TestDeployVerifyFailsTheIncidentsRoundsLikeTheWriteUp(t *testing.T) {
	t.Parallel()
	url := plantIncident(t)

	res := withDB(url).run(t, "deploy", "verify")

	require.Equal(t, 1, res.Code, res.Stderr)
	require.Empty(t, res.Stderr, "the report says why; nothing more on stderr")
	golden.Require(t, "testdata/deploy_verify_incident.golden", []byte(res.Stdout))
}

func TestDeployVerifyJSONHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	url := plantIncident(t)

	res := withDB(url).run(t, "deploy", "verify", "-o", "json")

	require.Equal(t, 1, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.ElementsMatch(t, []string{"release", "since", "until", "rounds_wanted", "window_seconds", "waited_seconds",
		"rounds", "checks", "health", "functions", "verdict"}, keysOf(got))
	functions := got["functions"].(map[string]any)
	require.ElementsMatch(t, []string{"shipped", "missing", "changed"}, keysOf(functions))
	require.Contains(t, functions["shipped"], "probe_claim", "the full list stays in JSON")
	require.Equal(t, []any{}, functions["missing"])
	require.ElementsMatch(t, []string{"jobs", "ok", "ok_share", "baseline_release_id", "common_servers", "common_ok_share",
		"baseline_ok_share", "drop_points", "max_ok_drop_points", "baseline_available"}, keysOf(got["health"].(map[string]any)))
	require.Equal(t, float64(10), got["health"].(map[string]any)["max_ok_drop_points"])
	require.Equal(t, "fail", got["verdict"])
	require.Equal(t, "2026-10-07T20:53:00Z", got["since"])
	require.Equal(t, float64(600), got["window_seconds"])
	require.ElementsMatch(t, []string{"id", "version", "kind", "active", "deployed_at", "deployed_by", "fanout",
		"claim_limit", "concurrency", "min_spacing_seconds", "request_timeout_seconds", "max_duration_seconds", "finish",
		"contact", "ways_back"}, keysOf(got["release"].(map[string]any)))
	round := got["rounds"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"id", "started_at", "finished_at", "jobs", "runs", "servers", "open_jobs",
		"runs_missing_envelope", "envelopes_invalid", "second_claims", "state"}, keysOf(round))
	claim := round["second_claims"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"server_id", "slug", "first_job_id", "second_job_id", "gap_after_finish_seconds",
		"request_gap_seconds", "explained"}, keysOf(claim))
	require.InDelta(t, 0.168, claim["gap_after_finish_seconds"], 0.0005)
	names := []string{}
	for _, c := range got["checks"].([]any) {
		check := c.(map[string]any)
		require.ElementsMatch(t, []string{"name", "status", "detail", "items"}, keysOf(check))
		names = append(names, check["name"].(string))
	}
	require.Equal(t, []string{"rounds", "jobs", "jobs_runs_servers", "open_jobs", "envelopes_present",
		"envelopes_valid", "duplicates", "functions", "lease", "health"}, names)
}

func TestDeployVerifyExitCodes(t *testing.T) {
	t.Parallel()
	t.Run("clean rounds pass with exit 0", func(t *testing.T) {
		t.Parallel()
		url, pool := migratedDB(t)
		_, v2 := incident(t, pool)
		fl := newFleet(t, pool, 4)
		fl.round(v2, deployAt.Add(2*time.Minute), []int{0, 1}, nil)
		fl.round(v2, deployAt.Add(7*time.Minute), []int{2, 3}, nil)
		res := withDB(url).run(t, "deploy", "verify")
		require.Equal(t, 0, res.Code, res.Stdout+res.Stderr)
		require.Contains(t, res.Stdout, "\nverdict: pass\n")
	})
	t.Run("no rounds are inconclusive with exit 1", func(t *testing.T) {
		t.Parallel()
		url, pool := migratedDB(t)
		incident(t, pool)
		res := withDB(url).run(t, "deploy", "verify", "-o", "json")
		require.Equal(t, 1, res.Code, res.Stderr)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
		require.Equal(t, "inconclusive", got["verdict"])
	})
	t.Run("a database that cannot be read is exit 3", func(t *testing.T) {
		t.Parallel()
		res := runCLI(t, "--database-url", "postgres://probectl@127.0.0.1:1/probectl?connect_timeout=5", "deploy", "verify")
		require.Equal(t, 3, res.Code, res.Stderr)
	})
	t.Run("--window sets the duplicate window", func(t *testing.T) {
		t.Parallel()
		url, pool := migratedDB(t)
		_, v2 := incident(t, pool)
		fl := newFleet(t, pool, 2)
		fl.round(v2, deployAt.Add(2*time.Minute), []int{0, 1}, nil)
		fl.round(v2, deployAt.Add(7*time.Minute), []int{0, 1}, nil) // the same servers about 5 min later
		res := withDB(url).run(t, "deploy", "verify")
		require.Equal(t, 1, res.Code, res.Stdout+res.Stderr)
		require.Regexp(t, `duplicates\s+fail`, res.Stdout)
		res = withDB(url).run(t, "deploy", "verify", "--window", "4m", "-o", "json")
		require.Equal(t, 0, res.Code, res.Stdout+res.Stderr)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
		require.InDelta(t, 240, got["window_seconds"], 0.001)
	})
	for _, bad := range []struct{ value, stderr string }{
		{"0", `--window: must be positive, got 0s`},
		{"soon", "--window:"},
	} {
		t.Run("a bad --window "+bad.value+" is exit 2 without connecting", func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, "--database-url", "postgres://probectl@127.0.0.1:1/probectl?connect_timeout=5",
				"deploy", "verify", "--window", bad.value)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, bad.stderr)
		})
	}
	for _, bad := range []string{"-1", "100.5", "NaN"} {
		t.Run("--max-ok-drop "+bad+" is exit 2 without connecting", func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, "--database-url", "postgres://probectl@127.0.0.1:1/probectl?connect_timeout=5",
				"deploy", "verify", "--max-ok-drop", bad)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "--max-ok-drop "+bad+": out of bounds: must be 0 to 100")
		})
	}
	t.Run("a bad --rounds is exit 2 without connecting", func(t *testing.T) {
		t.Parallel()
		res := runCLI(t, "deploy", "verify", "--rounds", "0")
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "--rounds 0: must be at least 1")
	})
}

// TestDeployVerifyWaitIsWiredToTheCommand drives --wait through the command's options: the
// rounds are planted after the command's first look.
func TestDeployVerifyWaitIsWiredToTheCommand(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	_, v2 := incident(t, pool)
	fl := newFleet(t, pool, 4)
	io, _, out, _ := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "v2"})
	t.Cleanup(f.Close)
	f.DatabaseURL, f.Output = url, "table"
	tick, looked := make(chan time.Time), make(chan release.Progress)
	opts := &deployVerifyOptions{f: f, Rounds: 2, Wait: time.Hour, Window: 10 * time.Minute, tick: tick,
		progress: func(p release.Progress) { looked <- p }}
	done := make(chan error, 1)
	go func() { done <- runDeployVerify(context.Background(), opts) }()

	// A verify that ends early (a bad option, say) must fail the test, not leave it waiting.
	look := func() release.Progress {
		t.Helper()
		select {
		case p := <-looked:
			return p
		case err := <-done:
			t.Fatalf("deploy verify ended before it looked for rounds: %v", err)
			return release.Progress{}
		}
	}
	require.Zero(t, look().Found)
	fl.round(v2, deployAt.Add(2*time.Minute), []int{0, 1}, nil)
	fl.round(v2, deployAt.Add(7*time.Minute), []int{2, 3}, nil)
	tick <- time.Now()
	require.True(t, look().Ready())

	require.NoError(t, <-done)
	require.Contains(t, out.String(), "\nverdict: pass\n")
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
