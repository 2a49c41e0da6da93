package main

import (
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
}
