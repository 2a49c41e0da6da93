package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
)

// A contact that is not a URL, or would break the User-Agent header, is refused before connecting.
func TestRunRoundRefusesABadContact(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://probe@127.0.0.1:1/probe"
	for _, contact := range []string{"probes at example", "https://probe.example/\r\nX-Evil: 1", "ftp://probe.example/"} {
		res := runCLI(t, "--database-url", nowhere, "run", "round", "--unsigned", "--contact", contact)
		assert.Equal(t, 2, res.Code, res.Stderr)
		assert.Contains(t, res.Stderr, "--contact: ")
	}
}

// deploy record judges --contact as run round does, before it connects.
func TestDeployRecordRefusesABadContact(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://probe@127.0.0.1:1/probe"
	res := cli{env: map[string]string{"USER": "ana"}}.run(t, "--database-url", nowhere, "deploy", "record", "--contact", "probes at example")
	assert.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "--contact: ")
}

// The contact a release carries is the one a round's requests name, unless --contact overrides it.
func TestARoundNamesTheContactOfItsRelease(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fleet := fakefleet.New(t, nil)
	fleet.AddServers(t, pool, 2, "fleet", testfactory.ServerOpts{})
	db := cli{env: map[string]string{"USER": "ana", "PROBECTL_DATABASE_URL": url}}
	res := db.run(t, "deploy", "record", "--version", "dev", "--fanout", "0", "--claim-limit", "1",
		"--contact", "https://probe.example/about", "--ways-back", "none")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "https://probe.example/about", "deploy record shows the contact it recorded")

	res = db.run(t, "run", "round", "--unsigned", "--allow-private-targets", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = db.run(t, "run", "round", "--unsigned", "--allow-private-targets", "--contact", "mailto:probes@example.org", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"flag": "contact"`, "the override is reported")

	reqs := fleet.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "probectl/dev (+https://probe.example/about)", reqs[0].Header.Get("User-Agent"))
	assert.Equal(t, "probectl/dev (+mailto:probes@example.org)", reqs[1].Header.Get("User-Agent"))
}
