package probe

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/queries"
)

// A spool holds the results a round checked but could not store, so that the next round (or
// `probectl runs recover`) stores them: one JSON-lines file per process and round, each line
// written and fsync'd before the round moves on. A line holds what the run would have held (the
// result and its signed envelope) and nothing more: no database URL, no key.
//
// A file is locked (flock) by the round that writes it for as long as it writes, and by a replay
// while it replays, so a replay never takes a file a live round still appends to. A file is
// created under a hidden name, locked, then renamed to its final name: a replay never sees a file
// its writer has not locked yet.

// spoolExt ends the name of every spool file a replay reads.
const spoolExt = ".jsonl"

// DefaultSpoolDir is where results wait when --spool-dir is not given: $XDG_STATE_HOME/probectl,
// else ~/.local/state/probectl.
func DefaultSpoolDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "probectl"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("spool directory: no XDG_STATE_HOME and no home directory: %w", err)
		}
	}
	return filepath.Join(home, ".local", "state", "probectl"), nil
}

// SpoolError says the spool directory cannot be used: nothing was claimed.
type SpoolError struct {
	Msg  string
	text *input.Text // Msg with its inputs kept apart (newSpoolError); nil: none
}

func (e *SpoolError) Error() string { return e.Msg }

// ExitCode: the round could not make sure it loses nothing.
func (e *SpoolError) ExitCode() int { return exit.Unavailable }

// spoolWarned holds the warnings about a spool directory's parents (checkSpoolParents) this
// process has logged, by their text (the spool directory, the parent and what is wrong with it):
// prepareSpoolDir runs at every round's start and every worker's heartbeat, and
// a parent that stays as it is (a local-path volume's root of mode 0777) is said once, not every
// time. A refusal is returned every time.
var spoolWarned sync.Map

// PrepareSpoolDir is prepareSpoolDir for the worker's heartbeat: a spool directory removed under
// a live worker is made again at its next beat, or why it cannot be is said.
func PrepareSpoolDir(dir string, log *slog.Logger) error { return prepareSpoolDir(dir, log) }

// prepareSpoolDir makes dir (0700) if it is missing and refuses one another user could write:
// a symbolic link, a directory owned by another user, or one group or others may write, or one
// with a parent another user owns (checkSpoolParents; a parent others may write is logged to log,
// once per process: spoolWarned). Any of them would let another user
// plant results for the next replay, or remove the ones this user spooled. It judges the directory it opened (fstat on the descriptor, opened without following
// a link), not a name that could be swapped between a look and an open. The parents that exist
// are judged before any missing directory is made (checkSpoolParentsBeforeMaking), so a spool
// directory under a parent another user owns is refused with nothing made under it; all of them
// are judged again once the directory exists.
func prepareSpoolDir(dir string, log *slog.Logger) error {
	if err := checkSpoolParentsBeforeMaking(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return spoolDirError(dir, err)
	}
	warnings, err := checkSpoolParents(dir)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		if log == nil {
			continue
		}
		if _, again := spoolWarned.LoadOrStore(w, true); !again {
			log.Warn(w)
		}
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || isSymlink(dir) {
			return newSpoolError("spool directory %s is a symbolic link: whoever can change the link "+
				"chooses what is replayed; give the directory itself (%s)", dir, InputSpoolDir)
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return newSpoolError("spool directory %s is not a directory (check %s)", dir, InputSpoolDir)
		}
		return &SpoolError{Msg: fmt.Sprintf("spool directory %s: %v", dir, err)}
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return &SpoolError{Msg: fmt.Sprintf("spool directory %s: %v", dir, err)}
	}
	if !fi.IsDir() {
		return newSpoolError("spool directory %s is not a directory (check %s)", dir, InputSpoolDir)
	}
	if msg := notOwnedByMe(fi); msg != "" {
		return newSpoolError("spool directory %s %s: that user could plant results in it or remove "+
			"this user's; run probectl as its owner, chown it to uid %d, or choose another %s", dir, msg, os.Geteuid(), InputSpoolDir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return newSpoolError("spool directory %s has mode %v: others may write it; "+
			"chmod 700 it or choose another %s", dir, fi.Mode().Perm(), InputSpoolDir)
	}
	return nil
}

// checkSpoolParents judges the spool directory's parents, up to /: whoever can write one can
// rename the spool directory away and put their own in its place. A parent owned by a user other
// than this one or root is refused: that user may do so whatever its mode. A parent this user or
// root owns that others may write, or a group this process is not in, without the sticky bit, is
// said as a warning, not refused: a replaced spool directory is refused at the next start (it is
// not this user's), and spool files are opened without following links and only when this user
// wrote them, so what such a parent allows is removing this user's spooled results, not planting
// any; and storage that hands out volume roots of mode 0777 (kind's and k3s's local-path
// provisioner) would otherwise stop every worker on it (docs/deploy.md). A parent writable by all
// with the sticky bit (/tmp) lets no one else rename what it holds, and passes; so does one
// writable by one of this process's groups (a user-private group, or a Kubernetes volume's
// fsGroup). The parents are those of the path as given and, when one of them is a symbolic link,
// those of the directory it leads to.
func checkSpoolParents(dir string) (warnings []string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, spoolDirError(dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, spoolDirError(dir, err)
	}
	return judgeSpoolParents(dir, filepath.Dir(abs), filepath.Dir(real))
}

// spoolDirError says the spool directory dir could not be made or judged (err), and what to check:
// the flag that names it, or XDG_STATE_HOME, which names it by default.
func spoolDirError(dir string, err error) *SpoolError {
	return newSpoolError("spool directory %s: %v (check %s or XDG_STATE_HOME)", dir, err, InputSpoolDir)
}

// checkSpoolParentsBeforeMaking judges, as checkSpoolParents does, the directories that would be
// the parents of dir, when dir is missing: its nearest existing ancestor and that one's parents
// (as given and, through a symbolic link, where it leads). MkdirAll would otherwise make
// directories under a parent another user owns before the refusal. It refuses only: a warning is
// said by the check after the directory is made, which judges the same parents and the new ones.
// When dir exists, or what stops the walk up is not a missing directory (a file in the way, a
// directory this user cannot search), it judges nothing: MkdirAll and the checks after it say
// what is wrong as they did.
func checkSpoolParentsBeforeMaking(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return spoolDirError(dir, err)
	}
	existing := abs
	for {
		fi, err := os.Stat(existing)
		if err == nil {
			if existing == abs || !fi.IsDir() {
				return nil
			}
			break
		}
		up := filepath.Dir(existing)
		if !errors.Is(err, fs.ErrNotExist) || up == existing {
			return nil
		}
		existing = up
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return spoolDirError(dir, err)
	}
	_, err = judgeSpoolParents(dir, existing, real)
	return err
}

// judgeSpoolParents judges each directory from each of starts up to / (each once), as
// checkSpoolParents says; dir is the spool directory its messages name.
func judgeSpoolParents(dir string, starts ...string) (warnings []string, err error) {
	seen := map[string]bool{}
	for _, start := range starts {
		for parent := start; !seen[parent]; parent = filepath.Dir(parent) {
			seen[parent] = true
			fi, err := os.Stat(parent)
			if err != nil {
				return nil, spoolDirError(dir, fmt.Errorf("%s above it: %w", parent, err))
			}
			msg, refuse := unsafeParent(fi)
			switch {
			case refuse:
				return nil, newSpoolError("spool directory %s: %s above it %s: that user could replace the spool "+
					"directory with their own; fix the parent's owner or mode, or choose another %s", dir, parent, msg, InputSpoolDir)
			case msg != "":
				warnings = append(warnings, fmt.Sprintf("spool directory %s: %s above it %s: another user could "+
					"move the spool directory away and remove the results spooled in it; chmod +t or o-w it", dir, parent, msg))
			}
		}
	}
	return warnings, nil
}

// unsafeParent says how another user could change the directory fi ("" when no one can), and
// whether that is a refusal (another user owns it) or a warning (its mode).
func unsafeParent(fi os.FileInfo) (msg string, refuse bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "has no owner this system reports", true
	}
	if st.Uid != 0 {
		if msg := notOwnedByMe(fi); msg != "" {
			return msg + " or root", true
		}
	}
	perm := fi.Mode().Perm()
	switch {
	case fi.Mode()&os.ModeSticky != 0:
		return "", false
	case perm&0o002 != 0:
		return fmt.Sprintf("has mode %v: others may write it and it has no sticky bit", perm), false
	case perm&0o020 != 0 && !inGroup(st.Gid):
		return fmt.Sprintf("has mode %v: its group (gid %d), none of this process's, may write it "+
			"and it has no sticky bit", perm, st.Gid), false
	}
	return "", false
}

// inGroup: gid is this process's effective group or one of its supplementary groups (a
// Kubernetes fsGroup is one).
func inGroup(gid uint32) bool {
	if int(gid) == os.Getegid() {
		return true
	}
	groups, err := os.Getgroups()
	if err != nil {
		return false
	}
	for _, g := range groups {
		if g == int(gid) {
			return true
		}
	}
	return false
}

// openSpoolFile opens a spool file to read or replay it, without following a symbolic link, and
// refuses one this user did not write: not a regular file, owned by another user, or writable by
// group or others (a spool file is made 0600). The checks are on the opened descriptor.
func openSpoolFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("spool file %s is a symbolic link: not read; remove it", path)
		}
		return nil, fmt.Errorf("open spool file %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open spool file %s: %w", path, err)
	}
	msg := notOwnedByMe(fi)
	switch {
	case !fi.Mode().IsRegular():
		msg = "is not a regular file"
	case msg == "" && fi.Mode().Perm()&0o022 != 0:
		msg = fmt.Sprintf("has mode %v: others may write it", fi.Mode().Perm())
	}
	if msg != "" {
		f.Close()
		return nil, fmt.Errorf("spool file %s %s: not replayed; a person should read it, then remove it", path, msg)
	}
	return f, nil
}

// countSpoolLines counts the results in a spool file without decoding them: its lines that are
// complete (a line a crash cut short has no newline, and was never acknowledged) and not empty.
// A complete line that does not hold a result counts too; a replay names it as a problem. It
// reads the file in blocks and allocates nothing per line, however long the lines.
func countSpoolLines(path string) (int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, fmt.Errorf("open spool file %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, prev := 0, byte('\n') // a newline at the start of the file ends no line
	for {
		k, err := f.Read(buf)
		for _, b := range buf[:k] {
			if b == '\n' && prev != '\n' {
				n++
			}
			prev = b
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read spool file %s: %w", path, err)
		}
	}
}

// notOwnedByMe says how fi is not owned by the user this process runs as ("" when it is).
func notOwnedByMe(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "has no owner this system reports"
	}
	me := os.Geteuid()
	if int(st.Uid) == me {
		return ""
	}
	owner := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(owner); err == nil {
		owner += " (" + u.Username + ")"
	}
	return fmt.Sprintf("is owned by uid %s, not by this user (uid %d)", owner, me)
}

// isSymlink says whether path names a symbolic link itself (only to word an error: the checks
// that decide are on an opened descriptor).
func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// spoolEntry is one line of a spool file: a finish that could not be made.
type spoolEntry struct {
	RoundID            int64           `json:"round_id"`
	Slug               string          `json:"slug"`
	Finish             string          `json:"finish"` // tx | advance-first: how to store it
	JobID              int64           `json:"job_id"`
	ServerID           int64           `json:"server_id"`
	ClaimedNextCheckAt time.Time       `json:"claimed_next_check_at"`
	Outcome            string          `json:"outcome"`
	Error              string          `json:"error,omitempty"`
	StartedAt          time.Time       `json:"started_at"`
	CheckFinishedAt    time.Time       `json:"check_finished_at"`
	Requests           int             `json:"requests"`
	Result             json.RawMessage `json:"result"`
	Envelope           json.RawMessage `json:"envelope,omitempty"`
	SpooledAt          time.Time       `json:"spooled_at"`
	Cause              string          `json:"cause"` // why the finish failed, for whoever reads the file
	// RequestedAt is when the job was claimed, by the database's clock: with the job, server and
	// round it tells the job from another that reuses its id after a failover. Records written
	// before it was added have none (see matchJob).
	RequestedAt *time.Time `json:"requested_at,omitempty"`
}

func (e spoolEntry) params() queries.FinishParams {
	return queries.FinishParams{JobID: e.JobID, ServerID: e.ServerID, ClaimedNextCheckAt: e.ClaimedNextCheckAt,
		Outcome: e.Outcome, Error: e.Error, StartedAt: e.StartedAt, CheckFinishedAt: e.CheckFinishedAt,
		Requests: e.Requests, Result: e.Result, Envelope: e.Envelope}
}

// spool is one round's spool file, made when the first result needs it.
type spool struct {
	dir     string
	roundID int64

	mu   sync.Mutex
	f    *os.File // nil until the first put
	name string   // the file's path under its final name
	// broken is the write or fsync that failed: part of its line may be in the file, and a line
	// appended after it would be read back glued to it, as one line that holds no result (which a
	// replay sets aside). So no result is acknowledged after it: each put says so, and its job
	// stays open, as when the spool cannot be written at all.
	broken error
	// kept counts the results put durably (written and fsync'd): a file that kept none holds
	// nothing a replay could store, and close removes it.
	kept int
}

// put appends one entry and fsyncs it: when put returns nil, the result survives a crash.
func (s *spool) put(e spoolEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode spooled result: %w", err)
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return fmt.Errorf("the spool file takes no more results after a failed write: %w", s.broken)
	}
	if s.f == nil {
		if s.f, s.name, err = createSpoolFile(s.dir, s.roundID); err != nil {
			return err
		}
	}
	if _, err := s.f.Write(line); err != nil {
		s.broken = fmt.Errorf("write spool file %s: %w", s.name, err)
		return s.broken
	}
	if err := s.f.Sync(); err != nil {
		s.broken = fmt.Errorf("fsync spool file %s: %w", s.name, err)
		return s.broken
	}
	s.kept++
	return nil
}

// path is the spool file's name, "" when nothing was spooled (kept).
func (s *spool) path() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept == 0 {
		return ""
	}
	return s.name
}

// close releases the file (and its lock): from then on a replay may take it. A file that kept no
// result (its first write failed: a full disk) is removed first, while still locked: it holds
// nothing to store, and left, status counted it as a file of results waiting.
func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	var err error
	if s.kept == 0 {
		if rmErr := os.Remove(s.name); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = fmt.Errorf("remove empty spool file %s: %w", s.name, rmErr)
		}
	}
	err = errors.Join(err, s.f.Close())
	s.f = nil
	return err
}

// createSpoolFile makes this process's file for the round, locked, under its final name.
func createSpoolFile(dir string, roundID int64) (*os.File, string, error) {
	return createLockedFile(dir, fmt.Sprintf("round-%d", roundID), spoolExt, "spool file")
}

// createLockedFile makes a new file of this process in dir (0600, never through a symbolic link,
// created under a hidden name and locked before it gets its final one, so that a replay never
// reads a file its writer still holds): the spool's and the journal's. what names it in errors.
func createLockedFile(dir, prefix, ext, what string) (*os.File, string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%s-pid-%d-%s%s", prefix, os.Getpid(), hex.EncodeToString(b[:]), ext)
	final := filepath.Join(dir, name)
	hidden := filepath.Join(dir, "."+name+".new")
	f, err := os.OpenFile(hidden, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("create %s in %s: %w", what, dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		os.Remove(hidden)
		return nil, "", fmt.Errorf("lock %s %s: %w", what, hidden, err)
	}
	if err := os.Rename(hidden, final); err != nil {
		f.Close()
		os.Remove(hidden)
		return nil, "", fmt.Errorf("name %s %s: %w", what, final, err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, final, nil
}

// syncDir makes a file's creation, rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open spool directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("fsync spool directory %s: %w", dir, err)
	}
	return nil
}
