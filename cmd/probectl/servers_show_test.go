package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestServersShowJSONHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	url, _, _ := signedMixedRound(t, 1, 1)

	res := runCLI(t, "--database-url", url, "servers", "show", "down-0", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	for _, key := range []string{"at", "server", "status_change", "next_check", "uptime", "latency_seconds", "tls", "tools", "auth", "last_runs"} {
		assert.Contains(t, got, key)
	}
	assert.Len(t, got, 10, "a new key is a change of the documented shape")
	assert.Equal(t, map[string]any{"24h": 0.0, "7d": 0.0, "30d": 0.0}, got["uptime"])
	assert.Equal(t, map[string]any{"p50": nil, "p95": nil}, got["latency_seconds"], "no ok check, no latency")
	assert.Nil(t, got["tls"])
	assert.Nil(t, got["tools"])
	assert.Equal(t, "down-0", got["server"].(map[string]any)["slug"])
	assert.Equal(t, "scheduled", got["next_check"].(map[string]any)["state"])
	runs := got["last_runs"].([]any)
	require.Len(t, runs, 1)
	assert.Contains(t, runs[0].(map[string]any)["error"], "404")

	res = runCLI(t, "--database-url", url, "servers", "show", "up-0")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "24h 100.0%  7d 100.0%  30d 100.0%")
	assert.Contains(t, res.Stdout, "last runs (probectl runs list --server up-0)")

	res = runCLI(t, "--database-url", url, "servers", "show", "nope")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, `server "nope"`)
}

func TestAPausedServerIsNeverClaimedAndResumeMakesItDueAtOnce(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 2, "fleet", testfactory.ServerOpts{})

	res := runCLI(t, "--database-url", url, "servers", "pause", "fleet-0", "--reason", "owner asked", "--actor", "ana")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "fleet-0: active -> paused: no round claims it until 'probectl servers resume fleet-0'\n", res.Stdout)
	res = runCLI(t, "--database-url", url, "servers", "pause", "fleet-0", "--reason", "again")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "fleet-0 is paused already: nothing changed")

	res = runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Regexp(t, `fleet-0\s.*paused; claimable only when made active again`, res.Stdout)

	res = runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets", "--fanout", "0", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var round map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &round))
	assert.Equal(t, 1.0, round["jobs"], "the paused server is not claimed")

	res = runCLI(t, "--database-url", url, "servers", "show", "fleet-0", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var show serverShowJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &show))
	require.NotNil(t, show.StatusChange)
	assert.Equal(t, "ana", show.StatusChange.ChangedBy)
	assert.Equal(t, "owner asked", show.StatusChange.Reason)
	assert.Equal(t, "paused", show.NextCheck.State)
	assert.Contains(t, show.NextCheck.Why, "paused by ana")

	// Resume: due at once, and the next round claims it.
	before := time.Now()
	res = runCLI(t, "--database-url", url, "servers", "resume", "fleet-0", "--reason", "done", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.JSONEq(t, `{"server":"fleet-0","from":"paused","to":"active","changed":true}`, res.Stdout)
	s, err := queries.GetServerBySlug(t.Context(), pool, "fleet-0")
	require.NoError(t, err)
	assert.False(t, s.NextCheckAt.After(time.Now()))
	assert.False(t, s.NextCheckAt.Before(before.Add(-time.Second)))
	res = runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets", "--fanout", "0", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &round))
	assert.Equal(t, 1.0, round["jobs"], "the resumed server is claimed at once")

	res = runCLI(t, "--database-url", url, "servers", "delist", "fleet-1", "--reason", "gone")
	require.Equal(t, 0, res.Code, res.Stderr)
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM server_status_changes`).Scan(&n))
	assert.Equal(t, 3, n, "pause, resume, delist; the repeated pause wrote nothing")
}

func TestServersStatusRefusesBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 1, "fleet", testfactory.ServerOpts{})
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no reason":         {[]string{"pause", "fleet-0"}, "--reason: required"},
		"a reason too long": {[]string{"pause", "fleet-0", "--reason", strings.Repeat("x", 501)}, "--reason: at most 500 characters"},
		"an unknown slug":   {[]string{"delist", "nope", "--reason", "x"}, `server "nope"`},
	} {
		res := runCLI(t, append([]string{"--database-url", url, "servers"}, tc.args...)...)
		assert.Equal(t, 2, res.Code, name)
		assert.Contains(t, res.Stderr, tc.want, name)
	}
	s, err := queries.GetServerBySlug(t.Context(), pool, "fleet-0")
	require.NoError(t, err)
	assert.Equal(t, "active", s.Status)
}
