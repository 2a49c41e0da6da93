package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// roundSettings runs an empty round (no servers) and returns the settings it recorded.
func roundSettings(t *testing.T, c cli, args ...string) map[string]any {
	t.Helper()
	res := c.run(t, append([]string{"run", "round", "--unsigned", "-o", "json"}, args...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Settings map[string]any `json:"settings"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	return got.Settings
}

func TestRunRoundRefusesAVersionThatIsNotActive(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	recordAt(t, pool, time.Now(), "v2", parallelSettings, release.WayPrevious)
	c := withDB(url)

	res := c.run(t, "run", "round", "--unsigned") // this binary is "dev"
	require.Equal(t, 3, res.Code, res.Stdout)
	require.Contains(t, res.Stderr, "release #1 (version v2) is active but this probectl is version dev")
	require.Contains(t, res.Stderr, "--ignore-version")

	res = c.run(t, "run", "round", "--unsigned", "--dry-run")
	require.Equal(t, 3, res.Code, "a dry run answers as the round would")

	require.Equal(t, float64(1), roundSettings(t, c, "--ignore-version")["release_id"])
}

func TestRunRoundTakesItsDefaultsFromTheActiveRelease(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	rel := recordAt(t, pool, time.Now(), "dev", release.Settings{Fanout: 1, ClaimLimit: 2, Concurrency: 1,
		MinSpacing: settings.Duration(12 * time.Minute), RequestTimeout: settings.Duration(5 * time.Second), MaxDuration: settings.Duration(time.Minute), Finish: "advance-first"})
	c := withDB(url)

	got := roundSettings(t, c)
	require.Equal(t, float64(rel.ID), got["release_id"])
	require.Equal(t, float64(1), got["fanout"])
	require.Equal(t, float64(2), got["claim_limit"])
	require.Equal(t, float64(1), got["concurrency"])
	require.Equal(t, float64(720), got["min_spacing_seconds"])
	require.Equal(t, float64(5), got["request_timeout_seconds"])
	require.Equal(t, float64(60), got["max_duration_seconds"])
	require.Equal(t, "advance-first", got["finish"])

	res := c.run(t, "run", "round", "--unsigned", "--concurrency", "2", "--fanout", "1")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "--concurrency 2 overrides release #1's 1\n")
	require.NotContains(t, res.Stdout, "--fanout", "a flag equal to the release's value overrides nothing")

	res = c.run(t, "run", "round", "--unsigned", "--concurrency", "2", "--fanout", "1", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var summary struct {
		Overrides []overrideJSON `json:"overrides"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &summary))
	require.Equal(t, []overrideJSON{{Flag: "concurrency", Release: "1", Round: "2"}}, summary.Overrides,
		"scripts see the override too")
}

func TestTheRoundAfterARollbackRunsWithTheNewSettings(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	recordAt(t, pool, time.Now().Add(-time.Hour), "dev", sequentialSettings, release.WayPrevious)
	recordAt(t, pool, time.Now(), "dev", parallelSettings, release.WayPrevious, release.WayFanoutOff)
	c := withDB(url)
	require.Equal(t, float64(19), roundSettings(t, c)["fanout"])

	res := c.run(t, "rollback", "--fanout-off", "--yes", "--reason", "duplicates")
	require.Equal(t, 0, res.Code, res.Stderr)

	got := roundSettings(t, c)
	require.Equal(t, float64(0), got["fanout"])
	require.Equal(t, float64(1), got["concurrency"])
	require.Equal(t, float64(3), got["release_id"], "the fan-out-off release")
}
