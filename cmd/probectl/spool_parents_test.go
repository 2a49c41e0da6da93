package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A spool directory under a parent others may write is used, and the parent is named in a
// warning on stderr: storage that hands out volume roots of mode 0777 (kind's, k3s's) must not stop
// a worker. A parent another user owns is refused (probe/spool_parents_test.go).
func TestASpoolDirectoryUnderAParentOthersMayWriteIsUsedWithAWarning(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o777))
	dir := filepath.Join(open, "spool")

	res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "spool directory "+dir+": "+open+" above it has mode -rwxrwxrwx")

	res = cli{env: map[string]string{"XDG_STATE_HOME": open}}.run(t, "--database-url", url, "runs", "recover")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, open+" above it has mode -rwxrwxrwx")
}
