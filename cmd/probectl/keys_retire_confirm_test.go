package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onTerminal runs probectl as on a terminal whose user types answer.
func onTerminal(t *testing.T, answer string, args ...string) cliResult {
	t.Helper()
	io, in, out, errOut := testStreams()
	io.InTTY, io.OutTTY, io.NoColor = true, true, true
	in.WriteString(answer)
	code := Execute(context.Background(), args, io, func(string) string { return "" })
	return cliResult{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

func keyRetired(t *testing.T, url, id string) bool {
	t.Helper()
	res := runCLI(t, "--database-url", url, "keys", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var keys []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &keys))
	for _, k := range keys {
		if k["key_id"] == id {
			return k["retired_at"] != nil
		}
	}
	t.Fatalf("key %s not listed", id)
	return false
}

func TestKeysRetireAsksOnATerminal(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	id := generatedKey(t, url)

	res := onTerminal(t, "n\n", "--database-url", url, "keys", "retire", id)
	require.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, "would retire signing key "+id+" from ")
	assert.Contains(t, res.Stderr, "retire it? [y/N] ")
	assert.Contains(t, res.Stderr, "keys retire cancelled; nothing changed")
	assert.False(t, keyRetired(t, url, id))

	res = onTerminal(t, "y\n", "--database-url", url, "keys", "retire", id)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "retired signing key "+id)
	assert.True(t, keyRetired(t, url, id))
}

func TestKeysRetireYesDoesNotAsk(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	id := generatedKey(t, url)
	res := onTerminal(t, "", "--database-url", url, "keys", "retire", id, "--yes")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.NotContains(t, res.Stderr, "[y/N]")
	assert.True(t, keyRetired(t, url, id))
}

func TestKeysRetireDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	id := generatedKey(t, url)
	res := runCLI(t, "--database-url", url, "keys", "retire", id, "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "would retire signing key "+id+" from ")
	assert.Contains(t, res.Stderr, "warning: it would leave no signing key", "nothing was retired yet")

	res = runCLI(t, "--database-url", url, "keys", "retire", id, "--dry-run", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.Equal(t, true, got["dry_run"])
	assert.Equal(t, true, got["changed"], "what would change")
	assert.False(t, keyRetired(t, url, id))
}
