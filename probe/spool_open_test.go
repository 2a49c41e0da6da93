package probe

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// A spool whose write failed part way takes no more results, even once a write would succeed
// again (a disk with room again): a line appended after the failed one would be glued to what it
// left, read back as a line that holds no result, and set aside by a replay, its result with it.
func TestASpoolWhoseWriteFailedTakesNoMoreResults(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // the next write fails
	s := &spool{roundID: 7, f: w, name: "pipe"}
	requested := time.Now().UTC().Truncate(time.Microsecond)
	require.ErrorIs(t, s.put(lostClaimEntry(3, 1, 7, requested)), syscall.EPIPE)

	good, err := os.CreateTemp(t.TempDir(), "spool")
	require.NoError(t, err)
	t.Cleanup(func() { good.Close() })
	s.f = good
	err = s.put(lostClaimEntry(4, 1, 7, requested))
	require.ErrorIs(t, err, syscall.EPIPE, "refused, with the failure that stopped it")
	require.ErrorContains(t, err, "takes no more results")
	fi, err := good.Stat()
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "nothing appended after the failed write")
}

// A spool file that kept no result (its first write failed: a full disk) is removed when the
// round closes it, and the round names no spool file: it was left empty, and status counted it
// as a file whose results wait ("0 result(s) in 1 file(s)") until a replay.
func TestASpoolFileThatKeptNoResultIsRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, name, err := createSpoolFile(dir, 7)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // the write fails, as on a full disk
	s := &spool{dir: dir, roundID: 7, f: w, name: name}
	require.Error(t, s.put(lostClaimEntry(3, 1, 7, time.Now().UTC())))
	require.Empty(t, s.path(), "nothing was spooled")
	require.NoError(t, s.close())
	require.NoFileExists(t, name)
}

// A failover journal that made no line durable (its first write failed) is removed when it is
// closed, as an empty spool file is: left, it was a 0-byte journal in the spool for a person.
func TestAJournalThatKeptNoLineIsRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, name, err := createJournalFile(dir, 1, 7)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // the write fails, as on a full disk
	j := &journal{dir: dir, roundID: 7, timeline: 1, f: w, name: name}
	require.Error(t, j.put(lostClaimEntry(3, 1, 7, time.Now().UTC())))
	require.NoError(t, j.close())
	require.NoFileExists(t, name)
}
