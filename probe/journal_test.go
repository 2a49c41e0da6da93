package probe

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A round's finishes journal their results at once (a batch's answers come back together): every
// put lands in the file once, whole, whichever put fsyncs for the others.
func TestJournalPutsAtOnceEachLandOnceAndWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := &journal{dir: dir, roundID: 7, timeline: 1}
	const writers, each = 32, 25
	requested := time.Now().UTC().Truncate(time.Microsecond)
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				errs <- j.put(lostClaimEntry(int64(w*each+i+1), 1, 7, requested))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, j.close())

	files, err := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	require.NoError(t, err)
	require.Len(t, files, 1, "one journal for the process and round")
	f, err := os.Open(files[0])
	require.NoError(t, err)
	defer f.Close()
	seen := map[int64]int{}
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var e spoolEntry
		require.NoError(t, json.Unmarshal(lines.Bytes(), &e), "a whole line: %q", lines.Text())
		seen[e.JobID]++
	}
	require.NoError(t, lines.Err())
	require.Len(t, seen, writers*each, "every result once")
	for job, n := range seen {
		require.Equal(t, 1, n, "job %d", job)
	}
}

// After an fsync fails, the kernel may have dropped the pages it could not write, and a later
// fsync can succeed without them: the journal takes no more results, and says so to every put,
// rather than write lines it cannot vouch for. (A pipe stands for the file: fsync on it fails.)
func TestAJournalWhoseFsyncFailedTakesNoMoreResults(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	j := &journal{roundID: 7, timeline: 1, f: w, name: "pipe"}
	requested := time.Now().UTC().Truncate(time.Microsecond)

	err = j.put(lostClaimEntry(1, 1, 7, requested))
	require.ErrorIs(t, err, syscall.EINVAL)
	require.ErrorContains(t, err, "fsync journal pipe")
	again := j.put(lostClaimEntry(2, 1, 7, requested))
	require.ErrorIs(t, again, syscall.EINVAL, "the failed fsync is the answer to every later put")
	require.NoError(t, j.close())

	written := <-read
	var e spoolEntry
	require.NoError(t, json.Unmarshal(written, &e), "only the first line was written: %q", written)
	require.Equal(t, int64(1), e.JobID)
}
