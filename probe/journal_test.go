package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
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
	requireRefusedAfterAFailure(t, &journal{roundID: 7, timeline: 1, f: w, name: "pipe"}, syscall.EINVAL, "fsync journal pipe")

	written := <-read
	var e spoolEntry
	require.NoError(t, json.Unmarshal(written, &e), "only the first line was written: %q", written)
	require.Equal(t, int64(1), e.JobID)
}

// heldSyncs stands for a file's fsyncs in awaitDurable: each call says it began and waits for
// the test's answer.
type heldSyncs struct {
	began  chan struct{}
	answer chan error
}

func newHeldSyncs() heldSyncs {
	return heldSyncs{began: make(chan struct{}, 4), answer: make(chan error)}
}

func (h heldSyncs) sync() error {
	h.began <- struct{}{}
	return <-h.answer
}

// writeAndAwait writes a line as put does (counted under the lock) and waits for it to be
// durable; wrote says the line is written, and the answer comes on the returned channel.
func writeAndAwait(j *journal, h heldSyncs, wrote chan<- struct{}) <-chan error {
	out := make(chan error, 1)
	go func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.written++
		if wrote != nil {
			wrote <- struct{}{}
		}
		out <- j.awaitDurable(j.written, h.sync)
	}()
	return out
}

// A line written while an fsync runs is not covered by it (the fsync may have flushed before the
// line was there): its put waits for the next fsync, which it leads, and only then returns.
func TestAJournalLineWrittenDuringAnFsyncWaitsForTheNext(t *testing.T) {
	t.Parallel()
	j := &journal{name: "test"}
	h := newHeldSyncs()
	first := writeAndAwait(j, h, nil)
	<-h.began // the first line's fsync runs
	wrote := make(chan struct{}, 1)
	second := writeAndAwait(j, h, wrote)
	<-wrote
	h.answer <- nil
	require.NoError(t, <-first)
	select {
	case <-h.began:
	case err := <-second:
		t.Fatalf("the second line's put returned (%v) without an fsync begun after its line", err)
	}
	h.answer <- nil
	require.NoError(t, <-second)
	require.Equal(t, int64(2), j.durable)
}

// A put waiting behind an fsync that fails gets that failure, and no other fsync is tried: a
// later one could succeed without the pages the kernel dropped.
func TestAJournalPutWaitingBehindAFailedFsyncGetsItsError(t *testing.T) {
	t.Parallel()
	j := &journal{name: "test"}
	h := newHeldSyncs()
	first := writeAndAwait(j, h, nil)
	<-h.began
	wrote := make(chan struct{}, 1)
	second := writeAndAwait(j, h, wrote)
	<-wrote
	failed := errors.New("EIO")
	h.answer <- failed
	require.ErrorIs(t, <-first, failed)
	select {
	case <-h.began:
		t.Fatal("an fsync was tried after one failed")
	case err := <-second:
		require.ErrorIs(t, err, failed)
	}
}

// Closing the journal fsyncs the lines no fsync has covered yet, so that a put still waiting is
// answered for the file its line is in, not by a later file's fsync.
func TestClosingAJournalFsyncsItsLastLines(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp(t.TempDir(), "journal")
	require.NoError(t, err)
	j := &journal{f: f, name: f.Name()}
	_, err = f.WriteString("{}\n")
	require.NoError(t, err)
	j.written = 1
	require.NoError(t, j.close())
	require.Equal(t, j.written, j.durable)
}

// The lines written while an fsync runs share the next one: the put that runs it fsyncs every
// line written so far, not only its own, and a put whose line it covered needs no fsync at all.
func TestJournalLinesWrittenDuringAnFsyncShareTheNext(t *testing.T) {
	t.Parallel()
	j := &journal{name: "test"}
	h := newHeldSyncs()
	first := writeAndAwait(j, h, nil)
	<-h.began
	wrote := make(chan struct{}, 1)
	second := writeAndAwait(j, h, wrote)
	<-wrote
	// A third line, written during the first fsync too, whose put has not asked yet.
	j.mu.Lock()
	j.written++
	third := j.written
	j.mu.Unlock()
	h.answer <- nil
	require.NoError(t, <-first)
	<-h.began // the second put's fsync
	h.answer <- nil
	require.NoError(t, <-second)

	j.mu.Lock()
	defer j.mu.Unlock()
	require.Equal(t, third, j.durable, "the second fsync covered the third line too")
	require.NoError(t, j.awaitDurable(third, h.sync), "without another fsync")
}

// After a failed fsync the round logs that result's failure once, then refuses the later ones
// without a line each, and says how many at the close.
func TestAJournalThatStoppedSaysSoOnceAndCountsTheRest(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, r) }()
	var logs bytes.Buffer
	round := &Round{DB: testDB(t), Log: slog.New(slog.NewTextHandler(&logs, nil))}
	st := &state{roundID: 7, journal: &journal{dir: t.TempDir(), roundID: 7, timeline: 1, f: w, name: "pipe"}}
	requested := time.Now().UTC().Truncate(time.Microsecond)
	job := queries.ClaimedJob{JobID: 1, ServerID: 1, Slug: "s", RequestedAt: requested}
	for i := range 4 {
		job.JobID = int64(i + 1)
		round.journalResult(st, job, queries.FinishParams{JobID: job.JobID, ServerID: 1, Outcome: "ok",
			Result: json.RawMessage(`{"outcome":"ok"}`), RequestedAt: &requested})
	}
	round.closeJournal(ctx, st)
	require.Equal(t, 1, strings.Count(logs.String(), "journal failed: this result is not kept"), logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), "the journal stopped at a failed write or fsync"), logs.String())
	require.Contains(t, logs.String(), "results=3")
}

// A write that fails may have left part of its line in the file, and the next line would be
// appended to it and read back as bad although its put said it was kept: after a failed write
// the journal takes no more results, as after a failed fsync. (A pipe whose reader is gone stands
// for the file: a write to it fails.)
func TestAJournalWhoseWriteFailedTakesNoMoreResults(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	requireRefusedAfterAFailure(t, &journal{roundID: 7, timeline: 1, f: w, name: "pipe"}, syscall.EPIPE, "write journal pipe")
}

// A failed write stops new lines, not the fsyncs of the lines written whole before it: a put
// waiting for the next fsync still gets it, and is answered as kept.
func TestAJournalWriteThatFailsLeavesTheLinesBeforeItToTheirFsync(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // the journal's next write fails
	j := &journal{name: "pipe", f: w}
	h := newHeldSyncs()
	first := writeAndAwait(j, h, nil)
	<-h.began
	wrote := make(chan struct{}, 1)
	second := writeAndAwait(j, h, wrote)
	<-wrote
	requested := time.Now().UTC().Truncate(time.Microsecond)
	require.ErrorIs(t, j.put(lostClaimEntry(3, 1, 7, requested)), syscall.EPIPE)
	h.answer <- nil
	require.NoError(t, <-first)
	select {
	case <-h.began:
	case err := <-second:
		t.Fatalf("the second line, written whole before the failed write, got no fsync: %v", err)
	}
	h.answer <- nil
	require.NoError(t, <-second)
	require.ErrorIs(t, j.put(lostClaimEntry(4, 1, 7, requested)), errJournalOff, "no line after the failed write")
}

// requireRefusedAfterAFailure puts two results in j, whose file fails the first with cause (what
// says where): the second is refused, not written, with the first's cause, and counted; j closes.
func requireRefusedAfterAFailure(t *testing.T, j *journal, cause syscall.Errno, what string) {
	t.Helper()
	requested := time.Now().UTC().Truncate(time.Microsecond)
	err := j.put(lostClaimEntry(1, 1, 7, requested))
	require.ErrorIs(t, err, cause)
	require.ErrorContains(t, err, what)
	again := j.put(lostClaimEntry(2, 1, 7, requested))
	require.ErrorIs(t, again, errJournalOff, "refused, not written")
	require.ErrorIs(t, again, cause, "with the failure's cause")
	require.Equal(t, 1, j.refusedCount())
	require.NoError(t, j.close())
}
