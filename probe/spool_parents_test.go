package probe

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
)

// A spool directory is only as safe as its parents: whoever may write one can rename the spool
// directory away and put their own in its place. A parent another user owns is refused; one of
// this user's or root's that others (or a group not this process's) may write without the sticky
// bit is said as a warning (storage that hands out volume roots of mode 0777 must still work).
func TestASpoolDirectoryWhoseParentAnotherUserCouldChangeIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// make returns the spool directory to give and the parent the error or warning must name
		// ("" when the directory is fine).
		make func(t *testing.T, base string) (dir, parent string)
		want string
		warn bool // want is a warning, not a refusal
	}{
		{"a parent others may write", func(t *testing.T, base string) (string, string) {
			open := mkdir(t, base, "open", 0o777)
			return filepath.Join(open, "spool"), open
		}, "has mode -rwxrwxrwx: others may write it and it has no sticky bit", true},
		{"a grandparent another group may write", func(t *testing.T, base string) (string, string) {
			shared := mkdir(t, base, "shared", 0o775)
			giveGroupAway(t, shared)
			mine := mkdir(t, shared, "mine", 0o700)
			return filepath.Join(mine, "spool"), shared
		}, "has mode -rwxrwxr-x: its group (gid 65534), none of this process's", true},
		{"a parent this process's own group may write, like a Kubernetes volume's root", func(t *testing.T, base string) (string, string) {
			shared := mkdir(t, base, "shared", 0o775|os.ModeSetgid)
			require.NoError(t, os.Lchown(shared, -1, os.Getegid()))
			return filepath.Join(shared, "spool"), ""
		}, "", false},
		{"a parent reached through a link, writable by others where it leads", func(t *testing.T, base string) (string, string) {
			open := mkdir(t, base, "open", 0o777)
			real := mkdir(t, open, "real", 0o700)
			link := filepath.Join(base, "link")
			require.NoError(t, os.Symlink(real, link))
			return filepath.Join(link, "spool"), open
		}, "others may write it", true},
		{"a parent owned by another user", func(t *testing.T, base string) (string, string) {
			theirs := mkdir(t, base, "theirs", 0o755)
			giveAway(t, theirs)
			mine := mkdir(t, theirs, "mine", 0o700)
			return filepath.Join(mine, "spool"), theirs
		}, "is owned by uid 65534", false},
		{"a sticky parent owned by another user", func(t *testing.T, base string) (string, string) {
			sticky := mkdir(t, base, "sticky", 0o777|os.ModeSticky)
			giveAway(t, sticky)
			mine := mkdir(t, sticky, "mine", 0o700)
			return filepath.Join(mine, "spool"), sticky
		}, "is owned by uid 65534", false},
		{"a sticky parent of this user's that all may write, like /tmp", func(t *testing.T, base string) (string, string) {
			sticky := mkdir(t, base, "sticky", 0o777|os.ModeSticky)
			mine := mkdir(t, sticky, "mine", 0o700)
			return filepath.Join(mine, "spool"), ""
		}, "", false},
		{"parents only this user may write", func(t *testing.T, base string) (string, string) {
			return filepath.Join(mkdir(t, base, "mine", 0o755), "a", "spool"), ""
		}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, parent := c.make(t, t.TempDir())

			var logged bytes.Buffer
			err := prepareSpoolDir(dir, slog.New(slog.NewTextHandler(&logged, nil)))

			if c.want == "" || c.warn {
				require.NoError(t, err)
				if c.want == "" {
					require.Empty(t, logged.String())
					return
				}
				require.Contains(t, logged.String(), "level=WARN")
				require.Contains(t, logged.String(), "spool directory "+dir+": "+parent+" above it ")
				require.Contains(t, logged.String(), c.want)
				return
			}
			var se *SpoolError
			require.True(t, errors.As(err, &se), "%v", err)
			require.Equal(t, exit.Unavailable, se.ExitCode())
			require.ErrorContains(t, err, "spool directory "+dir+": "+parent+" above it ")
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "choose another "+string(InputSpoolDir))
		})
	}
}

// mkdir makes parent/name with exactly mode (umask aside).
func mkdir(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, mode))
	return dir
}

// giveAway gives dir to another user; only root can, so elsewhere the test says loudly why it did
// not run (CI runs the tests as root).
func giveAway(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() == 65534 {
		t.Skip("SKIPPED, NOT TESTED: this process is uid 65534, the other user these tests use")
	}
	if err := os.Lchown(dir, 65534, 65534); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: cannot give %s to uid 65534 (run the tests as root): %v", dir, err)
	}
}

// giveGroupAway gives dir to another group; only root can, so elsewhere the test says loudly why
// it did not run.
func giveGroupAway(t *testing.T, dir string) {
	t.Helper()
	if os.Getegid() == 65534 {
		t.Skip("SKIPPED, NOT TESTED: this process's group is 65534, the other group these tests use")
	}
	if err := os.Lchown(dir, -1, 65534); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: cannot give %s to gid 65534 (run the tests as root): %v", dir, err)
	}
}

// spoolGroupChild is set in the child TestAParentWritableByASupplementaryGroupPasses starts.
const spoolGroupChild = "PROBECTL_TEST_SPOOL_GROUP_CHILD"

// A parent writable by one of this process's supplementary groups passes without a warning: a
// Kubernetes volume's root is group-writable by the pod's fsGroup, a supplementary group when
// runAsGroup names another. The process's groups are its own for every thread, so the check runs
// in a child started with gid 0 and the supplementary group 65533 (only root can start it; the
// test says so loudly elsewhere).
func TestAParentWritableByASupplementaryGroupPasses(t *testing.T) {
	if os.Getenv(spoolGroupChild) != "" {
		groups, err := os.Getgroups()
		require.NoError(t, err)
		require.Contains(t, groups, 65533)
		require.NotEqual(t, 65533, os.Getegid())
		shared := mkdir(t, t.TempDir(), "shared", 0o775)
		require.NoError(t, os.Lchown(shared, -1, 65533))
		var logged bytes.Buffer
		require.NoError(t, prepareSpoolDir(filepath.Join(shared, "spool"), slog.New(slog.NewTextHandler(&logged, nil))))
		require.Empty(t, logged.String(), "a parent one of this process's groups may write")
		return
	}
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED, NOT TESTED: only root can start a process with another supplementary group (CI runs the tests as root)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAParentWritableByASupplementaryGroupPasses$", "-test.count=1")
	cmd.Env = append(os.Environ(), spoolGroupChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{65533}}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "PASS")
}

// A spool directory to be made under a parent another user owns is refused before anything is
// made: MkdirAll used to make the missing directories (as this user, in the other user's
// directory) and the check after it only then refused them.
func TestASpoolDirectoryUnderAParentAnotherUserOwnsIsRefusedBeforeAnythingIsMade(t *testing.T) {
	t.Parallel()
	theirs := mkdir(t, t.TempDir(), "theirs", 0o755)
	giveAway(t, theirs)
	between := filepath.Join(theirs, "between")
	dir := filepath.Join(between, "spool")

	var logged bytes.Buffer
	err := prepareSpoolDir(dir, slog.New(slog.NewTextHandler(&logged, nil)))

	var se *SpoolError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, exit.Unavailable, se.ExitCode())
	require.ErrorContains(t, err, "spool directory "+dir+": "+theirs+" above it ")
	require.ErrorContains(t, err, "is owned by uid 65534")
	require.ErrorContains(t, err, "choose another "+string(InputSpoolDir))
	require.NoDirExists(t, between, "nothing is made under a parent another user owns")
	require.NoDirExists(t, dir)
}

// When a parent cannot be judged (it cannot be read, or the path cannot be resolved), the
// refusal names the spool directory's input, as the other refusals do, so that a command says it
// as --spool-dir; it stays a *SpoolError (exit 3, or 2 when --spool-dir gave the directory).
func TestASpoolParentThatCannotBeJudgedIsRefusedNamingTheSpoolDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	missing := filepath.Join(base, "missing", "spool")
	flag := func(n input.Name) string { return "--" + strings.ReplaceAll(string(n), "_", "-") }

	_, resolve := checkSpoolParents(missing) // the path cannot be resolved: it does not exist
	_, stat := judgeSpoolParents(missing, filepath.Dir(missing))
	for _, c := range []struct {
		err  error
		want string
	}{
		{resolve, "spool directory " + missing + ": "},
		{stat, "spool directory " + missing + ": " + filepath.Dir(missing) + " above it: "},
	} {
		var se *SpoolError
		require.True(t, errors.As(c.err, &se), "%v", c.err)
		require.Equal(t, exit.Unavailable, se.ExitCode())
		require.ErrorContains(t, c.err, c.want)
		require.ErrorContains(t, c.err, "(check "+string(InputSpoolDir)+" or XDG_STATE_HOME)")
		said, ok := input.Say(c.err, flag)
		require.True(t, ok, "%v names no input", c.err)
		require.Contains(t, said, "(check --spool-dir or XDG_STATE_HOME)")
	}
}

// The warning about a parent others may write is said once per process for a spool directory:
// prepareSpoolDir runs at every round's start and every heartbeat that finds results spooled, and
// a local-path volume's root of mode 0777 would otherwise be said again each time. A refusal is
// returned every time.
func TestAParentOthersMayWriteIsWarnedAboutOncePerProcess(t *testing.T) {
	t.Parallel()
	open := mkdir(t, t.TempDir(), "open", 0o777)
	dir := filepath.Join(open, "spool")
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))

	require.NoError(t, prepareSpoolDir(dir, log))
	require.NoError(t, prepareSpoolDir(dir, log))

	require.Contains(t, logged.String(), "spool directory "+dir+": "+open+" above it has mode -rwxrwxrwx")
	require.Equal(t, 1, strings.Count(logged.String(), "level=WARN"), "%s", logged.String())
	require.Equal(t, 1, strings.Count(logged.String(), open+" above it"), "%s", logged.String())

	require.NoError(t, os.Chmod(dir, 0o770))
	for range 2 {
		err := prepareSpoolDir(dir, log)
		var se *SpoolError
		require.True(t, errors.As(err, &se), "%v", err)
		require.ErrorContains(t, err, "spool directory "+dir+" has mode -rwxrwx---")
	}
	require.Equal(t, 1, strings.Count(logged.String(), "level=WARN"), "%s", logged.String())
}
