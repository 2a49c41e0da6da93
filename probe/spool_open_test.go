package probe

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A spool file is opened without following a symbolic link, and judged on the opened descriptor:
// a link swapped in for a spool file between the directory's listing and the open (another
// user's file behind it) is refused, as is a file another user owns or others may write.
func TestASpoolFileIsOpenedOnlyWhenThisUserWroteIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := filepath.Join(dir, "round-1-pid-1-aaaaaaaa.jsonl")
	require.NoError(t, os.WriteFile(mine, []byte("{}\n"), 0o600))
	f, err := openSpoolFile(mine, os.O_RDWR)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	elsewhere := filepath.Join(t.TempDir(), "planted.jsonl")
	require.NoError(t, os.WriteFile(elsewhere, []byte("{}\n"), 0o600))
	link := filepath.Join(dir, "round-2-pid-1-bbbbbbbb.jsonl")
	require.NoError(t, os.Symlink(elsewhere, link))
	_, err = openSpoolFile(link, os.O_RDONLY)
	require.ErrorContains(t, err, "is a symbolic link: not read")

	shared := filepath.Join(dir, "round-3-pid-1-cccccccc.jsonl")
	require.NoError(t, os.WriteFile(shared, []byte("{}\n"), 0o600))
	require.NoError(t, os.Chmod(shared, 0o620))
	_, err = openSpoolFile(shared, os.O_RDONLY)
	require.ErrorContains(t, err, "others may write it")

	theirs := filepath.Join(dir, "round-4-pid-1-dddddddd.jsonl")
	require.NoError(t, os.WriteFile(theirs, []byte("{}\n"), 0o600))
	if os.Geteuid() == 65534 {
		t.Skip("SKIPPED, NOT TESTED: this process is uid 65534, the other user this test uses")
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: cannot give a file to uid 65534 (run the tests as root): %v", err)
	}
	_, err = openSpoolFile(theirs, os.O_RDONLY)
	require.ErrorContains(t, err, "is owned by uid 65534")
}
