package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/release"
)

func activeID(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	h, err := release.ReadHistory(context.Background(), pool, 100)
	require.NoError(t, err)
	for _, r := range h.Releases {
		if r.Active {
			return r.ID
		}
	}
	t.Fatal("no release is active")
	return 0
}

func TestRollbackDryRunShowsTheChangeAndMakesNone(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	_, v2 := incident(t, pool)

	res := withDB(url).run(t, "rollback", "--to-previous", "--dry-run")

	require.Equal(t, 0, res.Code, res.Stderr)
	golden.Require(t, "testdata/rollback_dry_run.golden", []byte(res.Stdout))
	require.Equal(t, v2.ID, activeID(t, pool))
}

func TestRollbackWithYesAppliesOnceAndASecondSaysSo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, first, second string }{
		{"--to-previous", "rolled back: #1 (v1) is active (was #2 (v2)); recorded by ana at ",
			"already rolled back to the previous release: #1 (v1) is active since "},
		{"--fanout-off", "rolled back: #3 (v2, fan-out off) is active (was #2 (v2)); recorded by ana at ",
			"fan-out is already off: #3 (v2, fan-out off) is active since "},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			url, pool := migratedDB(t)
			incident(t, pool)
			c := withDB(url)

			res := c.run(t, "rollback", tc.flag, "--yes", "--reason", "duplicates at 20:55")
			require.Equal(t, 0, res.Code, res.Stderr)
			require.Contains(t, res.Stdout, tc.first)
			require.Contains(t, res.Stdout, "SETTING          BEFORE", "before and after are shown")

			res = c.run(t, "rollback", tc.flag, "--yes")
			require.Equal(t, 0, res.Code, res.Stderr)
			require.True(t, strings.HasPrefix(res.Stdout, tc.second), res.Stdout)
			require.Contains(t, res.Stdout, "(by ana, from #2: duplicates at 20:55); nothing to do\n")
		})
	}
}

func TestRollbackWithoutATerminalNeedsYes(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	_, v2 := incident(t, pool)

	res := withDB(url).run(t, "rollback", "--fanout-off")

	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "pass --yes")
	require.Equal(t, v2.ID, activeID(t, pool), "nothing changed")
}

func TestRollbackAsksOnATerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer  string
		code    int
		applied bool
	}{{"y\n", 0, true}, {"yes\n", 0, true}, {"n\n", 2, false}, {"\n", 2, false}} {
		t.Run("answering "+strings.TrimSpace(tc.answer), func(t *testing.T) {
			t.Parallel()
			url, pool := migratedDB(t)
			v1, v2 := incident(t, pool)
			var out, errOut bytes.Buffer
			io := &render.Streams{In: strings.NewReader(tc.answer), Out: &out, ErrOut: &errOut,
				InTTY: true, OutTTY: true, ErrTTY: true}
			env := map[string]string{"PROBECTL_DATABASE_URL": url, "USER": "ana"}

			code := Execute(context.Background(), []string{"--no-color", "rollback", "--to-previous"}, io,
				func(k string) string { return env[k] })

			require.Equal(t, tc.code, code, errOut.String())
			require.Contains(t, errOut.String(), "roll back #2 (v2) now? [y/N] ")
			require.Contains(t, out.String(), "rollback will make the previous release active again: #2 (v2) -> #1 (v1)")
			want := v2.ID
			if tc.applied {
				want = v1.ID
			} else {
				require.Contains(t, errOut.String(), "rollback cancelled; nothing changed")
			}
			require.Equal(t, want, activeID(t, pool))
		})
	}
}

func TestRollbackTheActiveReleaseDidNotApprove(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	recordAt(t, pool, deployAt.Add(-1), "v1", sequentialSettings)
	v2 := recordAt(t, pool, deployAt, "v2", parallelSettings, release.WayPrevious)
	c := withDB(url)

	res := c.run(t, "rollback", "--fanout-off", "--yes")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, `release #2 (v2) did not approve the way back "fanout-off" (approved: previous); pass --force --reason`)
	require.Equal(t, v2.ID, activeID(t, pool))

	res = c.run(t, "rollback", "--fanout-off", "--yes", "--force")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "--force needs --reason")

	res = c.run(t, "rollback", "--fanout-off", "--yes", "--force", "--reason", "duplicates live", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.ElementsMatch(t, []string{"way", "dry_run", "applied", "already_done", "forced", "from", "to", "event"}, keysOf(got))
	require.Equal(t, true, got["forced"])
	require.Equal(t, true, got["applied"])
	require.Equal(t, "fanout-off", got["way"])
	require.Equal(t, float64(0), got["to"].(map[string]any)["fanout"])
	require.Equal(t, float64(1), got["to"].(map[string]any)["concurrency"])
	require.Equal(t, true, got["event"].(map[string]any)["forced"])
	require.Equal(t, "duplicates live", got["event"].(map[string]any)["reason"])
}

func TestRollbackNeedsExactlyOneWayBack(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"rollback"}, {"rollback", "--to-previous", "--fanout-off"}} {
		res := runCLI(t, args...)
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "pass exactly one of --to-previous and --fanout-off")
	}
}
