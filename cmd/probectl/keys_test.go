package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

func TestKeysGenerateWritesAPrivateFileAndRegistersThePublicKey(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	path := filepath.Join(t.TempDir(), "probe.key")

	res := runCLI(t, "--database-url", url, "keys", "generate", "--out", path)
	require.Equal(t, 0, res.Code, res.Stderr)

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "only the owner may read the key")
	signer, err := attest.LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, "generated signing key "+signer.KeyID()+"\nprivate key written to "+path+
		" (mode 0600); public key registered\n", res.Stdout)

	keys := testfactory.SigningKeys(context.Background(), t, pool)
	assert.Equal(t, signer.PublicKey(), keys[signer.KeyID()], "the registered key verifies what the file signs")

	pem, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout+res.Stderr, string(pem[30:60]), "the private key is never printed")
}

func TestKeysGenerateJSONHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	path := filepath.Join(t.TempDir(), "probe.key")

	res := runCLI(t, "--database-url", url, "keys", "generate", "--out", path, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	signer, err := attest.LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"key_id":           signer.KeyID(),
		"algorithm":        "ed25519",
		"public_key":       got["public_key"],
		"private_key_file": path,
	}, got)
	assert.Len(t, got["public_key"], 44, "base64 of 32 bytes")
}

func TestKeysGenerateRefusesToOverwriteAFileAndExits2(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	path := filepath.Join(t.TempDir(), "probe.key")
	require.NoError(t, os.WriteFile(path, []byte("the only copy of an old key"), 0o600))

	res := runCLI(t, "--database-url", url, "keys", "generate", "--out", path)
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, "--out: signing key "+path+": file already exists; refusing to overwrite a key")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "the only copy of an old key", string(data))
	keys := testfactory.SigningKeys(context.Background(), t, pool)
	assert.Empty(t, keys, "nothing was registered")
}

func TestKeysGenerateWritesNoFileWhenTheDatabaseIsOutOfReach(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "probe.key")
	res := runCLI(t, "--database-url", "postgres://probectl@127.0.0.1:1/none?connect_timeout=2", "keys", "generate", "--out", path)
	assert.Equal(t, 3, res.Code, res.Stderr)
	assert.NoFileExists(t, path)
}

func TestKeysGenerateWithoutOutIsAUsageError(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "keys", "generate")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, `"out" not set`)
}

func TestKeysListShowsEveryKeyOldestFirst(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	dir := t.TempDir()
	var ids []string
	for _, name := range []string{"a.key", "b.key"} {
		res := runCLI(t, "--database-url", url, "keys", "generate", "--out", filepath.Join(dir, name), "-o", "json")
		require.Equal(t, 0, res.Code, res.Stderr)
		var k keyGeneratedJSON
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &k))
		ids = append(ids, k.KeyID)
	}

	res := runCLI(t, "--database-url", url, "keys", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Len(t, got, 2)
	assert.ElementsMatch(t, ids, []any{got[0]["key_id"], got[1]["key_id"]})
	for _, k := range got {
		assert.Equal(t, "ed25519", k["algorithm"])
		assert.Contains(t, k, "created_at")
		assert.Nil(t, k["retired_at"])
		assert.Len(t, k, 4)
	}

	res = runCLI(t, "--database-url", url, "keys", "list")
	require.Equal(t, 0, res.Code, res.Stderr)
	out := lines(res.Stdout)
	require.Len(t, out, 3)
	assert.Regexp(t, `^KEY ID\s+ALGORITHM\s+CREATED\s+RETIRED`, out[0])
	assert.Regexp(t, `^ed25519:[0-9a-f]{16}\s+ed25519\s+\d{4}-\d\d-\d\dT\S+Z\s+-`, out[1])
}

func TestKeysHelpHasExamples(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"keys", "--help"}, {"keys", "generate", "--help"}, {"keys", "list", "--help"}, {"keys", "retire", "--help"}} {
		res := runCLI(t, args...)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Contains(t, res.Stdout, "Examples:", args)
	}
}

// generatedKey makes a key with 'keys generate' and returns its id.
func generatedKey(t *testing.T, url string) string {
	t.Helper()
	res := runCLI(t, "--database-url", url, "keys", "generate", "--out", filepath.Join(t.TempDir(), "probe.key"), "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var k keyGeneratedJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &k))
	return k.KeyID
}

func TestKeysRetireOnlyEverMovesARetirementEarlier(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	id := generatedKey(t, url)

	res := runCLI(t, "--database-url", url, "keys", "retire", id, "--at", "2026-11-28T14:05:00.5Z")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "retired signing key "+id+" from 2026-11-28T14:05:00.5Z on: runs it signs from then on fail verification\n", res.Stdout)
	assert.Contains(t, res.Stderr, "no signing key is left that rounds may sign with")

	// Again from now, later: nothing changes.
	res = runCLI(t, "--database-url", url, "keys", "retire", id, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.JSONEq(t, `{"key_id": "`+id+`", "retired_at": "2026-11-28T14:05:00.5Z",
		"previously_retired_at": "2026-11-28T14:05:00.5Z", "changed": false, "dry_run": false}`, res.Stdout)

	// A leak found after the rotation: the retirement moves earlier.
	res = runCLI(t, "--database-url", url, "keys", "retire", id, "--at", "2026-11-28T09:00:00Z")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "moved the retirement of signing key "+id+" earlier, from 2026-11-28T14:05:00.5Z to "+
		"2026-11-28T09:00:00Z: runs it signed that finished from then on fail verification\n", res.Stdout)

	keys, err := queries.ListSigningKeys(t.Context(), pool)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.Equal(t, "2026-11-28T09:00:00Z", keys[0].RetiredAt.UTC().Format(time.RFC3339Nano))
	left := testfactory.SigningKeys(t.Context(), t, pool)
	assert.Empty(t, left, "rounds may no longer sign with it")
}

func TestKeysRetireWithoutAtRetiresFromNowAndSaysNothingWhileAKeyIsLeft(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	old := generatedKey(t, url)
	current := generatedKey(t, url)

	res := runCLI(t, "--database-url", url, "keys", "retire", old, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Empty(t, res.Stderr)
	var got keyRetiredJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.True(t, got.Changed)
	assert.Nil(t, got.PreviouslyRetiredAt)
	assert.WithinDuration(t, time.Now(), got.RetiredAt, time.Minute)
	left := testfactory.SigningKeys(t.Context(), t, pool)
	assert.Equal(t, []string{current}, slices.Collect(maps.Keys(left)))
}

func TestKeysRetireRefusesBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	id := generatedKey(t, url)
	unreachable := "postgres://probectl@127.0.0.1:1/none?connect_timeout=2"
	cases := []struct {
		name, url string
		args      []string
		stderr    string
	}{
		{"an unknown key", url, []string{"ed25519:0000000000000000"}, `no signing key "ed25519:0000000000000000" is registered`},
		{"an unreadable --at, before connecting", unreachable, []string{id, "--at", "yesterday"}, "--at:"},
		{"an --at in the future, before connecting", unreachable, []string{id, "--at", "2999-01-01T00:00:00Z"}, "--at: 2999-01-01T00:00:00Z is in the future"},
		{"no key id", url, nil, "accepts 1 arg(s)"},
	}
	for _, tc := range cases {
		res := runCLI(t, append([]string{"--database-url", tc.url, "keys", "retire"}, tc.args...)...)
		assert.Equal(t, 2, res.Code, "%s: %s", tc.name, res.Stderr)
		assert.Contains(t, res.Stderr, tc.stderr, tc.name)
	}
	keys, err := queries.ListSigningKeys(t.Context(), pool)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.Nil(t, keys[0].RetiredAt)
}

func TestAKeyMadeForOneDatabaseIsRegisteredInAnotherByTheCommandTheRefusalNames(t *testing.T) {
	t.Parallel()
	first, _ := migratedDB(t)
	second, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 2, "fleet", testfactory.ServerOpts{})
	key := filepath.Join(t.TempDir(), "probe.key")
	id := func() string {
		res := runCLI(t, "--database-url", first, "keys", "generate", "--out", key, "-o", "json")
		require.Equal(t, 0, res.Code, res.Stderr)
		var k keyGeneratedJSON
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &k))
		return k.KeyID
	}()

	// The second database does not know the key: the round refuses it and names the command.
	round := []string{"--database-url", second, "run", "round", "--signing-key", key, "--allow-private-targets", "--fanout", "0"}
	res := runCLI(t, round...)
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "'probectl keys register KEY_FILE'")

	// The advised command, with the key file the round was given.
	res = runCLI(t, "--database-url", second, "keys", "register", key)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "registered signing key "+id+": runs it signs verify in this database\n", res.Stdout)
	pemText, err := os.ReadFile(key)
	require.NoError(t, err)
	assert.NotContains(t, res.Stdout+res.Stderr, string(pemText[30:60]), "the private key is never printed")
	signer, err := attest.LoadSigner(key)
	require.NoError(t, err)
	assert.Equal(t, signer.PublicKey(), testfactory.SigningKeys(t.Context(), t, pool)[id])

	res = runCLI(t, "--database-url", second, "keys", "register", key, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.Equal(t, []string{"algorithm", "already_registered", "key_id", "public_key", "retired_at"}, slices.Sorted(maps.Keys(got)))
	assert.Equal(t, true, got["already_registered"], "registering again changes nothing")

	// Now the round signs with it, and its runs verify against this database's keys.
	res = runCLI(t, round...)
	require.Equal(t, 0, res.Code, res.Stderr)
	jobs, err := queries.ListRoundJobs(t.Context(), pool, 1)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		_, err := attest.Verify(j.Envelope, testfactory.SigningKeys(t.Context(), t, pool))
		require.NoError(t, err)
	}

	// A file that is not a private key only its owner reads is bad input, and nothing is written.
	loose := filepath.Join(t.TempDir(), "loose.key")
	require.NoError(t, os.WriteFile(loose, pemText, 0o644))
	res = runCLI(t, "--database-url", second, "keys", "register", loose)
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "chmod 600")
	notAKey := filepath.Join(t.TempDir(), "probe.pub")
	require.NoError(t, os.WriteFile(notAKey, []byte("not a key"), 0o600))
	res = runCLI(t, "--database-url", second, "keys", "register", notAKey)
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "no PEM block found")
	require.Len(t, testfactory.SigningKeys(t.Context(), t, pool), 1)

	// A retired key stays retired, and registering it again says so.
	require.Equal(t, 0, runCLI(t, "--database-url", second, "keys", "retire", id, "--yes").Code)
	res = runCLI(t, "--database-url", second, "keys", "register", key)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "signing key "+id+" is registered already; nothing changed\n", res.Stdout)
	assert.Contains(t, res.Stderr, "warning: it was retired at ")
	res = runCLI(t, round...)
	require.Equal(t, 2, res.Code, "a retired key signs nothing: %s", res.Stderr)
}
