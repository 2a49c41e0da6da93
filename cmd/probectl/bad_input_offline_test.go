package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
)

// Bad input is judged before the database is asked: with no database answering, a bad flag of the
// new commands still exits 2 and names the flag, not 3 for the unreachable database.
func TestTheNewCommandsJudgeTheirInputBeforeTheyConnect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notAKey := filepath.Join(dir, "probe.pub")
	require.NoError(t, os.WriteFile(notAKey, []byte("not a key"), 0o600))
	missing := filepath.Join(dir, "missing.key")
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"receivers", "add", "x", "--url", "ftp://a", "--format", "slack"}, "--url"},
		{[]string{"receivers", "add", "x", "--url", "https://a.example", "--format", "bogus"}, "--format"},
		// Delivery never reaches a metadata endpoint or a link-local address: said when added, not
		// at the first event.
		{[]string{"receivers", "add", "x", "--url", "http://169.254.169.254/x", "--format", "slack"},
			"--url: 169.254.169.254 is a cloud metadata address"},
		{[]string{"receivers", "add", "x", "--url", "http://[fe80::1]:9093", "--format", "alertmanager"}, "--url: fe80::1 is a link-local address"},
		// --events given empty names no type: not "every type", which leaving it out says.
		{[]string{"receivers", "add", "x", "--url", "https://a.example", "--format", "slack", "--events", ""}, "--events"},
		{[]string{"servers", "sync", "--registry", "ftp://x"}, "--registry"},
		{[]string{"servers", "sync", "--registry", "https://x.example", "--every", "1s"}, "--every"},
		{[]string{"alerts", "policy", "set", "--down-after", "0"}, "--down-after"},
		{[]string{"runs", "prune", "--before", "garbage"}, "--before"},
		{[]string{"runs", "export", "--before", "2026-01-01", "--out", filepath.Join(dir, "missing", "x.gz")},
			"--out " + filepath.Join(dir, "missing", "x.gz") + ": its directory " + filepath.Join(dir, "missing") + " is not an existing directory"},
		{[]string{"runs", "retention", "set", "--keep", "0d", "--unit", "week"}, "--keep"},
		{[]string{"runs", "retention", "set", "--keep", "1d"}, "--keep"},
		{[]string{"runs", "retention", "set", "--unit", "month"}, "--unit"},
		{[]string{"deploy", "verify", "--max-ok-drop", "101"}, "--max-ok-drop"},
		{[]string{"deploy", "list", "--limit", "99999999999"}, "--limit 99999999999: must be between 1 and 10000"},
		// keys register reads and judges its key file before it connects.
		{[]string{"keys", "register", missing}, "KEY_FILE: signing key " + missing},
		{[]string{"keys", "register", notAKey}, "KEY_FILE: signing key " + notAKey},
	}
	for _, c := range cases {
		res := runCLI(t, append([]string{"--database-url", nowhere}, c.args...)...)
		require.Equal(t, exit.Usage, res.Code, "%v: %s", c.args, res.Stderr)
		require.Contains(t, res.Stderr, c.flag, "%v", c.args)
	}
}
