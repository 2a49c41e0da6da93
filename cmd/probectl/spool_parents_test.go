package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A spool directory under a parent others may write is refused, naming that parent: exit 2 with
// --spool-dir (choose another), 3 when the default ($XDG_STATE_HOME/probectl) is the one.
func TestASpoolDirectoryUnderAParentOthersMayWriteIsRefused(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	dir := filepath.Join(open, "spool")

	res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "--spool-dir: spool directory "+dir+": "+open+" above it has mode -rwxrwxrwx")
	require.Contains(t, res.Stderr, "or choose another --spool-dir")

	res = cli{env: map[string]string{"XDG_STATE_HOME": open}}.run(t, "--database-url", url, "runs", "recover")
	require.Equal(t, 3, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, open+" above it has mode -rwxrwxrwx")
}
