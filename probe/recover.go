package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// Recovery is what a replay of the spool did.
type Recovery struct {
	Dir string
	// Files were replayed whole and removed.
	Files int
	// Stored results were stored now; AlreadyStored ones had their run already (a replay that ran
	// before, or a finish that committed without its round hearing it): nothing was written.
	Stored, AlreadyStored int
	// Restored results had lost their claim (an asynchronous failover): each was stored under a
	// finished job of its own, marked as restored (included in Stored).
	Restored int
	// Busy files are still written by a live round: left for a later replay.
	Busy int
	// Left are results that could not be stored: they stay in the spool, and status shows them.
	Left int
	// Problems say why, one per result or file.
	Problems []string
	// SetAside says each spool file this replay set aside for a person to read (setAside), and,
	// from RecoverAll, each failover journal (JournalReplay.SetAside): not a problem of the replay,
	// since no replay could store what is left in them.
	SetAside []string
}

// LogSetAside logs each file this replay set aside.
func (rec Recovery) LogSetAside(log *slog.Logger) { logSetAside(log, "a spool file", rec.SetAside) }

// logSetAside logs each line of setAside, the files (what) a replay set aside.
func logSetAside(log *slog.Logger, what string, setAside []string) {
	for _, a := range setAside {
		log.Warn(what+" is set aside for a person to read", "set_aside", a)
	}
}

// SpoolContents is what waits in a spool directory.
type SpoolContents struct {
	Dir     string
	Files   int
	Results int
	// SetAside counts the spool files and failover journals set aside for a person to read
	// (setAside): they hold what no replay can store, and stay until a person removes them.
	SetAside int
}

// maxSpoolLine bounds one line of a spool file: a result is capped well below it.
const maxSpoolLine = 16 << 20

// spoolFiles lists the spool files of dir, oldest name first; a missing dir has none.
func spoolFiles(dir string) ([]string, error) {
	files, _, err := listSpoolDir(dir)
	return files, err
}

// listSpoolDir reads dir once: its spool files, oldest name first, and how many of its spool files
// and failover journals are set aside for a person to read (setAside). A missing dir has neither.
func listSpoolDir(dir string) (files []string, setAside int, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read spool directory %s: %w", dir, err)
	}
	for _, e := range ents {
		switch name := e.Name(); {
		case !e.Type().IsRegular() || strings.HasPrefix(name, "."):
		case strings.HasSuffix(name, spoolExt):
			files = append(files, filepath.Join(dir, name))
		case strings.HasSuffix(name, journalExt+asideExt), strings.HasSuffix(name, spoolExt+asideExt):
			setAside++
		}
	}
	slices.Sort(files)
	return files, setAside, nil
}

// InspectSpool counts the results waiting in dir, without replaying or locking anything, and
// without parsing them (countSpoolLines): the worker's heartbeat asks every 10 s.
func InspectSpool(dir string) (SpoolContents, error) {
	c := SpoolContents{Dir: dir}
	files, setAside, err := listSpoolDir(dir)
	if err != nil {
		return c, err
	}
	c.SetAside = setAside
	for _, p := range files {
		n, err := countSpoolLines(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return c, err
		}
		if err == nil {
			c.Files++
			c.Results += n
		}
	}
	return c, nil
}

// RecoverAll is what `runs recover` does by hand: the journals a failover left (results stored on
// a timeline the database no longer has, docs/deploy.md) are replayed first, then the spool. The
// journals' counts are folded into the spool's: a host whose rounds stopped after a failover
// restores what its journals hold without waiting for a round.
func RecoverAll(ctx context.Context, db queries.DBTX, dir string, log *slog.Logger) (Recovery, error) {
	if err := prepareSpoolDir(dir, log); err != nil {
		return Recovery{Dir: dir}, err
	}
	jr, jerr := ReplayJournals(ctx, db, dir, log)
	rec, err := Recover(ctx, db, dir, log)
	if err != nil {
		return rec, err
	}
	if jerr != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("journals not replayed: %v", jerr))
		return rec, nil
	}
	rec.Files += jr.Files
	rec.Stored += jr.Stored
	rec.Restored += jr.Restored
	rec.AlreadyStored += jr.AlreadyStored
	rec.Left += jr.Left
	rec.Problems = append(rec.Problems, jr.Problems...)
	rec.SetAside = append(rec.SetAside, jr.SetAside...)
	return rec, nil
}

// Recover stores every result waiting in the spool directory dir, each exactly once: the run's
// job id is unique, so a result whose run exists is counted as already stored and changes
// nothing. A file is removed once all its results are stored, or set aside (setAside) once every
// result that can be stored is and what is left no replay can store; a file a live round still
// writes is left alone. The error is a *SpoolError when dir cannot be used, else nil: results
// that could not be stored stay in the spool and are counted in Left and Problems.
func Recover(ctx context.Context, db queries.DBTX, dir string, log *slog.Logger) (Recovery, error) {
	rec := Recovery{Dir: dir}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := prepareSpoolDir(dir, log); err != nil {
		return rec, err
	}
	files, err := spoolFiles(dir)
	if err != nil {
		return rec, &SpoolError{Msg: err.Error()}
	}
	// Once a result fails to store for a reason that is the database's (it did not answer), the
	// rest are not tried: each would wait out the finish's whole budget, so a spool of N results
	// would hold a round or a worker's start for N x finishTimeout while the database is down.
	down := false
	for _, p := range files {
		recoverFile(ctx, db, p, log, &rec, &down)
	}
	return rec, nil
}

// recoverFile replays one spool file under its lock, and removes it when all of it is stored, or
// sets it aside (setAside) when what is left in it no replay can store.
func recoverFile(ctx context.Context, db queries.DBTX, path string, log *slog.Logger, rec *Recovery, down *bool) {
	f, err := openSpoolFile(path, os.O_RDWR)
	if errors.Is(err, os.ErrNotExist) {
		return // another replay took it
	}
	if err != nil {
		rec.Problems = append(rec.Problems, err.Error())
		return
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		rec.Busy++
		log.Info("spool file is still written by a live round; left for later", "file", path)
		return
	}
	// Another replay may have emptied and removed it between our open and our lock.
	if fi, err := f.Stat(); err != nil || !sameFile(path, fi) {
		return
	}
	entries, bad, err := readSpoolFile(path)
	if err != nil {
		rec.Problems = append(rec.Problems, err.Error())
		return
	}
	left := 0
	var kept []string // why, for each result no replay can store (isKept)
	for i, e := range entries {
		if *down {
			n := len(entries) - i
			left += n
			rec.Problems = append(rec.Problems, fmt.Sprintf("%d result(s) in %s not tried: the database did not answer; they stay in the spool",
				n, filepath.Base(path)))
			break
		}
		already, restored, err := storeSpooled(ctx, db, e, "spool", log)
		switch {
		case isKept(err):
			kept = append(kept, fmt.Sprintf("spooled job %d (%s): %v", e.JobID, e.Slug, err))
		case err != nil:
			*down = queries.Transient(err)
			left++
			rec.Problems = append(rec.Problems, fmt.Sprintf("job %d (%s) from %s: %v; it stays in the spool",
				e.JobID, e.Slug, filepath.Base(path), err))
		case already:
			rec.AlreadyStored++
		default:
			rec.Stored++
			if restored {
				rec.Restored++
			}
		}
	}
	if left > 0 {
		// The file stays for the next replay, and what no replay can store in it is said with it
		// until the rest is stored.
		rec.Left += left + len(kept)
		for _, k := range kept {
			rec.Problems = append(rec.Problems, fmt.Sprintf("%s from %s; it stays in the spool", k, filepath.Base(path)))
		}
		for _, b := range bad {
			rec.Problems = append(rec.Problems, fmt.Sprintf("%s: %s; the file is kept for a person to read", filepath.Base(path), b))
		}
		return
	}
	if len(bad)+len(kept) > 0 {
		if line, err := setAside(path, len(entries)-len(kept), append(bad, kept...)); err != nil {
			rec.Left += len(kept)
			rec.Problems = append(rec.Problems, err.Error())
		} else {
			rec.SetAside = append(rec.SetAside, line)
		}
		return
	}
	if err := os.Remove(path); err != nil {
		rec.Problems = append(rec.Problems, fmt.Sprintf("remove replayed spool file %s: %v (replaying it again changes nothing)", path, err))
		return
	}
	_ = syncDir(filepath.Dir(path))
	rec.Files++
}

// asideExt ends the name of a spool file or journal set aside (setAside), for a person to read:
// no replay reads it, and status counts it until a person removes it.
const asideExt = ".bad"

// setAsideShown bounds the lines one set-aside file's message quotes: a file can hold a round's
// worth of results no replay can store, and it keeps them all.
const setAsideShown = 3

// setAside renames path, a spool file or journal whose every result that can be stored is (stored
// of them, or there already), to a name no replay reads: what is left in it no later replay can
// store either (lines that hold no result, cut short by a crash or a failed write, and results
// kept for a person: isKept; why, one line each). So it is said once, in the line returned, and
// does not hold up every round after it; status counts it until a person removes it.
// A file of that name already there (a person's copy) is not replaced: the file stays where
// every replay reads it, and the error says so, and why it was to be set aside.
func setAside(path string, stored int, why []string) (string, error) {
	aside := path + asideExt
	reasons := render.FirstOf(why, setAsideShown, "; ")
	if err := renameNoReplace(path, aside); err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%s is there already (move it away)", filepath.Base(aside))
		}
		return "", fmt.Errorf("set aside %s: %w; it stays where every replay reads it: %s", path, err, reasons)
	}
	_ = syncDir(filepath.Dir(path))
	return fmt.Sprintf("%s is set aside as %s for a person to read (%d of its results stored, or there already): %s",
		filepath.Base(path), filepath.Base(aside), stored, reasons), nil
}

func sameFile(path string, fi os.FileInfo) bool {
	cur, err := os.Stat(path)
	return err == nil && os.SameFile(cur, fi)
}

// readSpoolFile reads a spool file's entries; bad lists the lines that do not parse (a line cut
// short by a crash in the middle of its write was never acknowledged to the round).
func readSpoolFile(path string) (entries []spoolEntry, bad []string, err error) {
	f, err := openSpoolFile(path, os.O_RDONLY)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxSpoolLine)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e spoolEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.JobID == 0 {
			bad = append(bad, fmt.Sprintf("line %d does not hold a result", n))
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read spool file %s: %w", path, err)
	}
	return entries, bad, nil
}

// storeSpooled stores one spooled (or journaled: source) result the way its round would have,
// with the finish's retries and budget, once it has made sure the job the database holds under
// the result's id is the result's own (matchJob): else the claim vanished, and the result is
// restored under a job of its own (restoreSpooled), or kept. already: its run existed, nothing
// was written.
func storeSpooled(ctx context.Context, db queries.DBTX, e spoolEntry, source string, log *slog.Logger) (already, restored bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, finishTimeout)
	defer cancel()
	each := finishTimeout / finishWrites
	p := e.params()
	// Asked first: probe_finish answers a repeated job with a no-op, not an error.
	var job queries.ReplayedJob
	var found bool
	err = retry(wctx, each, log, "read the job (replay)", func(ctx context.Context) error {
		job, found, err = queries.GetReplayedJob(ctx, db, e.JobID)
		return err
	})
	if err != nil {
		return false, false, err
	}
	if !found || !matchJob(e, job) {
		already, err = restoreSpooled(wctx, db, e, source, each, log)
		return already, err == nil && !already, err
	}
	if job.Stored {
		return true, false, nil
	}
	if e.Finish == FinishAdvanceFirst {
		// The advance is a compare-and-set on the claimed value: replayed, it moves the server on
		// only if nothing did since.
		err = retry(wctx, each, log, "advance (replay)", func(ctx context.Context) error {
			_, err := queries.AdvanceServer(ctx, db, e.JobID, e.ServerID, e.ClaimedNextCheckAt, nil)
			return err
		})
		if err == nil {
			err = retry(wctx, each, log, "finish job (replay)", func(ctx context.Context) error {
				_, err := queries.FinishJob(ctx, db, p)
				return err
			})
		}
	} else {
		err = retry(wctx, each, log, "finish (replay)", func(ctx context.Context) error {
			_, err := queries.FinishTx(ctx, db, p)
			return err
		})
	}
	if queries.RunAlreadyStored(err) {
		return true, false, nil
	}
	return false, false, err
}

// renameLooked renames from to to unless to exists, by looking first. Nothing of probectl's takes
// that name between the look and the rename: a set-aside name is made from a spool or journal
// file's, which is its process's alone, and the caller holds that file's lock.
func renameLooked(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}
