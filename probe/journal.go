package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/probectl/probectl/queries"
)

// The failover journal. Under asynchronous replication the last commits before a failover can
// vanish: a result the round stored (and the claim it answered) is then missing on the promoted
// standby. So each round keeps, beside its spool, a journal of every result it stored, for the
// in-flight window: one JSON-lines file per process and round, named with the timeline the
// database was on when the round began (journal-tl<T>-round-<r>-pid-<p>-<rand>.journal), each line
// the spool's record of the result, written and fsync'd after the finish committed. It is locked
// while written, like a spool file.
//
// A replay (ReplayJournals: at a round's start and end, and with a worker's heartbeat) reads the
// database's current timeline. A journal of another timeline is replayed as the spool is (matched
// by job, server, round and claim time: a result whose run is there changes nothing; one whose
// claim vanished is restored), then removed. A journal of the current timeline is removed once it
// is older than the in-flight window.

// journalExt ends the name of every journal file; a spool replay never reads them.
const journalExt = ".journal"

// journalKeep is how long a journal of the current timeline is kept.
const journalKeep = queries.InFlightWindow + time.Minute

// journal is one round's journal file, made when the first result needs it.
//
// Its fsyncs are shared (a group commit): a put writes its line and returns once an fsync begun
// after that write has ended. While one put fsyncs, the others write their lines and wait; when
// it ends, one of them fsyncs for all of them. A batch's finishes, which end together, pay for a
// few fsyncs rather than one each. (A line's write and fsync took 205-228 us on this project's
// test machines; one at a time under the lock, they held a round at 5,000 results a second at
// most, and at a tenth of River's rate when the machine was loaded: docs/scale.md.)
type journal struct {
	dir      string
	roundID  int64
	timeline int64

	mu      sync.Mutex
	f       *os.File
	name    string
	written int64         // lines written (over its files: a put after close makes another)
	durable int64         // of them, the lines an ended fsync covers
	syncing chan struct{} // closed when the running fsync ends; nil when none runs
	// broken is the fsync that failed. After a failed fsync the kernel may have dropped the
	// pages it could not write and a later fsync can succeed without them: no line is trusted to
	// be on disk any more, a waiting put's included.
	broken error
	// stopped is the write that failed. Part of its line may be in the file, and the next line
	// would be appended to it and read back as bad: no line is written after it. The lines
	// written whole before it are still fsync'd for their puts.
	stopped error
	// refused counts the puts refused (errJournalOff) after either.
	refused int
}

// errJournalOff refuses a result after a write or an fsync of the journal failed. A round has one
// journal; under a worker, each invocation has its own.
var errJournalOff = errors.New("the journal is off: a write or an fsync of it failed")

// put appends one stored result and returns once it is on disk.
func (j *journal) put(e spoolEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode journaled result: %w", err)
	}
	line = append(line, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if cause := errors.Join(j.broken, j.stopped); cause != nil {
		j.refused++
		return fmt.Errorf("%w: %w", errJournalOff, cause)
	}
	if j.f == nil {
		if j.f, j.name, err = createJournalFile(j.dir, j.timeline, j.roundID); err != nil {
			return err
		}
	}
	if _, err := j.f.Write(line); err != nil {
		j.stopped = fmt.Errorf("write journal %s: %w", j.name, err)
		return j.stopped
	}
	j.written++
	return j.awaitDurable(j.written, j.f.Sync)
}

// awaitDurable returns once line n is covered by an fsync (sync, of the file that line is in)
// begun after the line was written, or with the failed fsync's error. j.mu is held on entry and
// on return; it is let go while an fsync runs.
func (j *journal) awaitDurable(n int64, sync func() error) error {
	for j.durable < n {
		if j.broken != nil {
			return j.broken
		}
		if running := j.syncing; running != nil {
			// It may have begun before line n was written: wait for it, then look again.
			j.mu.Unlock()
			<-running
			j.mu.Lock()
			continue
		}
		// An fsync for every line written so far, n's and the waiting ones'.
		done, upto := make(chan struct{}), j.written
		j.syncing = done
		j.mu.Unlock()
		err := sync()
		j.mu.Lock()
		j.syncing = nil
		close(done)
		if err != nil {
			j.broken = fmt.Errorf("fsync journal %s: %w", j.name, err)
			return j.broken
		}
		j.durable = upto
	}
	return nil
}

// close releases the file and its lock: from then on a replay may take it. It first has every
// line written fsync'd (waiting for the running fsync, if any), so that a put still waiting is
// answered for the file its line is in. A journal that made no line durable (its first write or
// fsync failed) is removed first, while still locked, as an empty spool file is.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	var err error
	for err == nil && j.broken == nil && j.durable < j.written {
		err = j.awaitDurable(j.written, j.f.Sync)
	}
	if j.durable == 0 {
		if rmErr := os.Remove(j.name); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("remove empty journal %s: %w", j.name, rmErr))
		}
	}
	err = errors.Join(err, j.f.Close())
	j.f = nil
	return err
}

// refusedCount is how many results the journal refused after a write or an fsync of it failed.
func (j *journal) refusedCount() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.refused
}

// createJournalFile makes this process's journal for the round, locked, under its final name, as
// createSpoolFile makes a spool file.
func createJournalFile(dir string, timeline, roundID int64) (*os.File, string, error) {
	return createLockedFile(dir, fmt.Sprintf("journal-tl%d-round-%d", timeline, roundID), journalExt, "journal")
}

// journalTimeline reads the timeline from a journal file's name; 0 when it has none.
func journalTimeline(name string) int64 {
	rest, ok := strings.CutPrefix(filepath.Base(name), "journal-tl")
	if !ok {
		return 0
	}
	digits, _, _ := strings.Cut(rest, "-")
	tl, _ := strconv.ParseInt(digits, 10, 64)
	return tl
}

// JournalReplay is what a replay of the journals did.
type JournalReplay struct {
	// Timeline is the database's now; Switched says a journal of another one was found.
	Timeline int64
	Switched bool
	// SwitchSeen is when a probectl process first saw the current timeline.
	SwitchSeen time.Time
	// Files were replayed (or expired) and removed.
	Files int
	// Stored results were missing on the database and stored now (Restored of them under a job of
	// their own: their claim had vanished too); AlreadyStored were there.
	Stored, Restored, AlreadyStored int
	// Left could not be stored now: their file stays for the next replay.
	Left     int
	Problems []string
	// SetAside says, one line a file, each journal set aside: it held lines that hold no result
	// (cut short by a failed write or a crash) or results kept for a person (isKept), and once
	// every other result was stored it was set aside (setAside) under a name no replay reads,
	// for a person to read. Said once (LogSetAside, a round's summary, runs recover's set_aside),
	// and shown by status until removed; not a round's problem, since nothing a round could do is
	// left.
	SetAside []string
}

// LogSetAside logs each journal this replay set aside.
func (jr JournalReplay) LogSetAside(log *slog.Logger) {
	logSetAside(log, "a failover journal", jr.SetAside)
}

// ReplayJournals replays the journals in dir that were written on another timeline than the
// database's current one, each result exactly once, and removes journals past the in-flight
// window. db must be the primary. It records the timeline it sees (probectl_timelines), for the
// audit.
func ReplayJournals(ctx context.Context, db queries.DBTX, dir string, log *slog.Logger) (JournalReplay, error) {
	var out JournalReplay
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	var (
		tl   int64
		seen queries.Timeline
	)
	// Tried again inside a finish's budget: right after a failover the first connection may be
	// one the old primary's death broke.
	rctx, cancel := context.WithTimeout(ctx, finishTimeout)
	defer cancel()
	err := retry(rctx, finishTimeout/finishWrites, log, "read the timeline", func(ctx context.Context) error {
		var err error
		if tl, err = queries.CurrentTimeline(ctx, db); err != nil {
			return err
		}
		seen, err = queries.ObserveTimeline(ctx, db, tl, fmt.Sprintf("%s-%d", host, os.Getpid()))
		return err
	})
	if err != nil {
		return out, err
	}
	out.Timeline = tl
	out.SwitchSeen = seen.FirstSeen
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read journal directory %s: %w", dir, err)
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), journalExt) && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(files)
	for _, p := range files {
		replayJournal(ctx, db, p, tl, log, &out)
	}
	if out.Switched {
		log.Warn("the database is on another timeline than when results were journaled (a failover): "+
			"what it lacked is stored again", "timeline", tl, "first_seen", seen.FirstSeen, "stored", out.Stored,
			"restored", out.Restored, "already_stored", out.AlreadyStored, "left", out.Left)
	}
	return out, nil
}

func replayJournal(ctx context.Context, db queries.DBTX, path string, tl int64, log *slog.Logger, out *JournalReplay) {
	// As a spool file: never through a link, only a regular file of this user no one else may write.
	f, err := openSpoolFile(path, os.O_RDWR)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			out.Problems = append(out.Problems, err.Error())
		}
		return
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return // a live round still writes it
	}
	fi, err := f.Stat()
	if err != nil || !sameFile(path, fi) {
		return
	}
	if journalTimeline(path) == tl {
		if time.Since(fi.ModTime()) > journalKeep {
			if os.Remove(path) == nil {
				out.Files++
			}
		}
		return
	}
	out.Switched = true
	entries, bad, err := readSpoolFile(path)
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
		return
	}
	left := 0
	var kept []string // results no replay can store (isKept), said when the file is set aside
	for _, e := range entries {
		already, restored, err := storeSpooled(ctx, db, e, "journal", log)
		switch {
		case isKept(err):
			kept = append(kept, fmt.Sprintf("journaled job %d (%s): %v", e.JobID, e.Slug, err))
		case err != nil:
			left++
			out.Problems = append(out.Problems, fmt.Sprintf("journaled job %d (%s) from %s: %v; it stays in the journal",
				e.JobID, e.Slug, filepath.Base(path), err))
		case already:
			out.AlreadyStored++
		default:
			out.Stored++
			if restored {
				out.Restored++
			}
		}
	}
	out.Left += left
	if left > 0 {
		return // tried again at the next replay, cut lines and kept results with it
	}
	if len(bad)+len(kept) > 0 {
		if line, err := setAside(path, len(entries)-len(kept), append(bad, kept...)); err != nil {
			out.Left += len(kept)
			out.Problems = append(out.Problems, err.Error())
		} else {
			out.SetAside = append(out.SetAside, line)
		}
		return
	}
	if os.Remove(path) == nil {
		_ = syncDir(filepath.Dir(path))
		out.Files++
	}
}

// openJournal reads the database's timeline, replays the journals of other timelines that wait
// in dir (results a failover lost, written by rounds before this one), and returns this round's
// journal. A replay that fails is logged: it does not stop the round, and the next one tries again.
func (r *Round) openJournal(ctx context.Context, st *state, dir string, roundID int64) *journal {
	jr, err := ReplayJournals(ctx, r.DB, dir, r.Log)
	if err != nil {
		r.Log.Warn("the failover journal is off for this round: the database's timeline could not be read", "err", err)
		return nil
	}
	for _, p := range jr.Problems {
		st.problem("journal: %s", p)
	}
	r.noteSetAside(st, jr)
	return &journal{dir: dir, roundID: roundID, timeline: jr.Timeline}
}

// closeJournal closes the round's journal and replays the journals again: if the database failed
// over during the round, what the new primary lacks of this round's results is stored again now.
func (r *Round) closeJournal(ctx context.Context, st *state) *JournalReplay {
	if err := st.journal.close(); err != nil {
		r.Log.Warn("close journal", "err", err)
	}
	if n := st.journal.refusedCount(); n > 0 {
		r.Log.Error("the journal stopped at a failed write or fsync: the results stored after it are not kept against a failover",
			"results", n)
	}
	all, _ := r.finishBudgets()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), all)
	defer cancel()
	jr, err := ReplayJournals(wctx, r.DB, st.journal.dir, r.Log)
	if err != nil {
		st.problem("journal: replay after the round: %v; the next round or worker heartbeat replays it", err)
		return nil
	}
	for _, p := range jr.Problems {
		st.problem("journal: %s", p)
	}
	r.noteSetAside(st, jr)
	return &jr
}

// noteSetAside logs the journals a replay set aside and keeps them for the round's summary.
func (r *Round) noteSetAside(st *state, jr JournalReplay) {
	jr.LogSetAside(r.Log)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.journalSetAside = append(st.journalSetAside, jr.SetAside...)
}

// journalResult keeps a stored result in the round's journal, for a failover's replay. A journal
// that cannot be written loses only that protection: it is logged, not a problem of the round.
func (r *Round) journalResult(st *state, job queries.ClaimedJob, p queries.FinishParams) {
	if st.journal == nil {
		return
	}
	err := st.journal.put(spoolEntry{RoundID: st.roundID, Slug: job.Slug, Finish: r.Settings.Finish,
		JobID: p.JobID, ServerID: p.ServerID, ClaimedNextCheckAt: p.ClaimedNextCheckAt, Outcome: p.Outcome,
		Error: p.Error, StartedAt: p.StartedAt, CheckFinishedAt: p.CheckFinishedAt, Requests: p.Requests,
		Result: p.Result, Envelope: p.Envelope, SpooledAt: time.Now().UTC(), Cause: "journal", RequestedAt: &job.RequestedAt})
	if errors.Is(err, errJournalOff) {
		return // counted, and said once when the journal closes
	}
	if err != nil {
		r.Log.Error("journal failed: this result is not kept against a failover", "job", job.JobID, "server", job.Slug, "err", err)
	}
}

// roundTimeline is the timeline the journal was opened on (at the round's start; under a worker,
// the invocation's), for a claim to be judged against (queries.ClaimParams.Timeline); nil without
// a journal.
func (j *journal) roundTimeline() *int64 {
	if j == nil {
		return nil
	}
	tl := j.timeline
	return &tl
}

// failedOver says, before a claim (or after a claim that claimed nothing, which may have been
// refused on another timeline), whether the database is on another timeline than when the
// journal was opened: then the claims and results it lost in the failover are not there, their servers
// look due, and a claim now would check them twice. The invocation stops claiming (a decision,
// not a failure: the jobs it has are finished as usual); the round's end (or the next round's
// start) stores what was lost again from the journal first. A timeline that cannot be read
// (the database is away) lets the claim go and fail as it would.
func (r *Round) failedOver(ctx context.Context, st *state, inv int) bool {
	if st.journal == nil {
		return false
	}
	tctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	tl, err := queries.CurrentTimeline(tctx, r.DB)
	if err != nil || tl == st.journal.timeline {
		return false
	}
	r.Log.Warn("the database failed over: this invocation claims no more, so that no server whose claim the failover "+
		"lost is checked twice; what the new primary lacks is stored again from the journal", "invocation", inv,
		"timeline", tl, "was", st.journal.timeline)
	return true
}
