package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// pause, resume and delist take several slugs, as `kubectl cordon a b` does: all or none. An
// unknown slug exits 2 naming it, and the known ones named with it are left as they were.
func TestServersPauseResumeAndDelistTakeSeveralSlugsAllOrNone(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 3, "fleet", testfactory.ServerOpts{})
	status := func(slug string) string {
		s, err := queries.GetServerBySlug(t.Context(), pool, slug)
		require.NoError(t, err)
		return s.Status
	}

	res := runCLI(t, "--database-url", url, "servers", "pause", "fleet-0", "nope", "fleet-1", "--reason", "owner asked")
	require.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, `server "nope": no server with that slug; nothing was changed, not even the servers that exist`)
	assert.Empty(t, res.Stdout)
	assert.Equal(t, "active", status("fleet-0"))
	assert.Equal(t, "active", status("fleet-1"))

	res = runCLI(t, "--database-url", url, "servers", "pause", "fleet-0", "fleet-1", "--reason", "owner asked")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "fleet-0: active -> paused: no round claims it until 'probectl servers resume fleet-0'\n"+
		"fleet-1: active -> paused: no round claims it until 'probectl servers resume fleet-1'\n", res.Stdout)
	assert.Equal(t, "active", status("fleet-2"))

	res = runCLI(t, "--database-url", url, "servers", "resume", "fleet-1", "fleet-0", "--reason", "done", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var changes []statusChangeJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &changes), "several slugs: an array")
	assert.Equal(t, []statusChangeJSON{{Server: "fleet-1", From: "paused", To: "active", Changed: true},
		{Server: "fleet-0", From: "paused", To: "active", Changed: true}}, changes)

	res = runCLI(t, "--database-url", url, "servers", "delist", "fleet-2", "--reason", "gone", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.JSONEq(t, `{"server":"fleet-2","from":"active","to":"delisted","changed":true}`, res.Stdout, "one slug: an object, as before")

	for _, verb := range []string{"pause", "resume", "delist"} {
		res = runCLI(t, "servers", verb, "--help")
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Contains(t, res.Stdout, verb+" SLUG... --reason TEXT")
		assert.Contains(t, res.Stdout, "all or none, in one transaction")
		assert.Regexp(t, `probectl servers `+verb+` \S+ \S+`, res.Stdout, "an example names several servers")
	}
}
