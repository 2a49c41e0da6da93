package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
)

// carriedKeys are the JSON keys of the settings a release carries, from settings.Carried.
func carriedKeys(t *testing.T) []string {
	t.Helper()
	b, err := json.Marshal(settings.Carried{})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return keysOf(m)
}

// jsonAt decodes a command's JSON output and returns the object at path.
func jsonAt(t *testing.T, out string, path ...any) map[string]any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v.(map[string]any)
}

// Every command that shows a release's settings shows them with the same keys and values: deploy
// list, deploy verify, status (and its page's JSON, the same report) and run round.
func TestEveryCommandShowsAReleasesSettingsWithTheSameKeys(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 3, "fleet", testfactory.ServerOpts{})
	db := cli{env: map[string]string{"USER": "ana", "PROBECTL_DATABASE_URL": url}}
	res := db.run(t, "deploy", "record", "--version", "dev", "--fanout", "1", "--claim-limit", "2", "--concurrency", "1",
		"--max-duration", "3m", "--request-timeout", "7s", "--finish", "advance-first", "--contact", "mailto:probes@example.org",
		"--ways-back", "none")
	require.Equal(t, 0, res.Code, res.Stderr)
	round := db.run(t, "run", "round", "--unsigned", "--allow-private-targets", "-o", "json")
	require.Equal(t, 0, round.Code, round.Stderr)
	list := db.run(t, "deploy", "list", "-o", "json")
	require.Equal(t, 0, list.Code, list.Stderr)
	verify := db.run(t, "deploy", "verify", "--rounds", "1", "-o", "json")
	require.Contains(t, []int{0, 1}, verify.Code, verify.Stderr)
	status := db.run(t, "status", "-o", "json")
	require.Equal(t, 0, status.Code, status.Stderr)

	shown := map[string]map[string]any{
		"run round":     jsonAt(t, round.Stdout, "settings"),
		"deploy list":   jsonAt(t, list.Stdout, "releases", 0),
		"deploy verify": jsonAt(t, verify.Stdout, "release"),
		"status":        jsonAt(t, status.Stdout, "active_release"),
	}
	want := map[string]any{"fanout": 1.0, "claim_limit": 2.0, "concurrency": 1.0, "min_spacing_seconds": 600.0,
		"request_timeout_seconds": 7.0, "max_duration_seconds": 180.0, "finish": "advance-first",
		"contact": "mailto:probes@example.org"}
	require.ElementsMatch(t, carriedKeys(t), keysOf(want), "the test names every carried setting")
	for cmd, got := range shown {
		for _, key := range carriedKeys(t) {
			require.Contains(t, got, key, "%s shows %s", cmd, key)
			require.Equal(t, want[key], got[key], "%s's %s", cmd, key)
		}
	}
	require.Equal(t, "advance-first", shown["status"]["finish_mode"], "status keeps finish_mode, an alias of finish, for one release")
}
