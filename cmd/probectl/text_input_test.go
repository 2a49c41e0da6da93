package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A flag's value or an argument that is not UTF-8 is refused before anything is connected to
// (no database is configured here: reaching one would exit 3), naming it and not quoting it. The
// database refused it in a text column: a raw error, exit 3, after the command's earlier writes.
func TestTextThatIsNotUTF8IsRefusedNamingItsFlag(t *testing.T) {
	t.Parallel()
	bad := "bad\xffutf"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "record", "--note", bad}, "--note: not valid UTF-8 text"},
		{[]string{"deploy", "record", "--actor", bad}, "--actor: not valid UTF-8 text"},
		{[]string{"servers", "pause", bad, "--reason", "maintenance"}, "argument 1: not valid UTF-8 text"},
		{[]string{"runs", "retention", "set", "--keep", "30d", "--actor", bad}, "--actor: not valid UTF-8 text"},
		{[]string{"audit", "tools", "--server", bad}, "--server: not valid UTF-8 text"},
		{[]string{"runs", "export", "--before", "2026-01-01", "--out", t.TempDir() + "/x.gz", "--actor", bad}, "--actor: not valid UTF-8 text"},
	} {
		res := cli{env: map[string]string{"USER": "ana"}}.run(t, tc.args...)
		require.Equal(t, 2, res.Code, "%v: %s", tc.args, res.Stderr)
		require.Contains(t, res.Stderr, tc.want)
		require.NotContains(t, res.Stderr, bad, "the value is not quoted")
		require.Empty(t, res.Stdout)
	}
	// A path may be any bytes on Linux: a spool directory so named is not refused as text (it goes
	// on to the database, none here).
	res := cli{env: map[string]string{"USER": "ana"}}.run(t, "runs", "recover", "--spool-dir", t.TempDir()+"/"+bad)
	require.NotContains(t, res.Stderr, "not valid UTF-8", res.Stderr)
	// A shell completing a word passes what was typed so far, any bytes: completion goes on.
	res = cli{env: map[string]string{"USER": "ana"}}.run(t, "__complete", "servers", "pause", bad)
	require.Equal(t, 0, res.Code, res.Stderr)
}

// Free text a person writes into the history has a bound, in characters (UTF-8 ones count one):
// a --note of 100,000 characters was stored, and echoed whole.
func TestFreeTextOverItsBoundIsRefusedNamingItsFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "record", "--note", strings.Repeat("é", 2001)}, "--note: at most 2000 characters, got 2001"},
		{[]string{"deploy", "record", "--version", strings.Repeat("v", 201)}, "--version: at most 200 characters, got 201"},
		{[]string{"rollback", "--to-previous", "--reason", strings.Repeat("r", 501)}, "--reason: at most 500 characters, got 501"},
		{[]string{"servers", "pause", "weather", "--reason", "maintenance", "--actor", strings.Repeat("a", 201)},
			"--actor: at most 200 characters, got 201"},
	} {
		res := cli{env: map[string]string{"USER": "ana"}}.run(t, tc.args...)
		require.Equal(t, 2, res.Code, "%v: %s", tc.args[:2], res.Stderr)
		require.Contains(t, res.Stderr, tc.want)
		require.Empty(t, res.Stdout)
	}
	// At the bound, it goes on (to the database, none here: exit 3).
	res := cli{env: map[string]string{"USER": "ana"}}.run(t, "deploy", "record", "--note", strings.Repeat("é", 2000))
	require.Equal(t, 3, res.Code, res.Stderr)
}
