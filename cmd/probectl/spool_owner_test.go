package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// nobody is the uid another local user has in these tests (nobody on most systems).
const nobody = 65534

// plantedResult makes an open job and the spool line that would store a run for it, as another
// user would write it to plant a result.
func plantedResult(t *testing.T, pool *pgxpool.Pool) (job int64, line []byte) {
	t.Helper()
	ctx := context.Background()
	srv := testfactory.Server(ctx, t, pool, nil)
	round := testfactory.Round(ctx, t, pool, nil)
	job = testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	return job, testfactory.SpoolLine(ctx, t, pool, round, srv, job, map[string]any{"outcome": "ok", "summary": "planted"}, "planted")
}

// chownOrSkip gives path to another user; only root can, so elsewhere the test says loudly why
// it did not run (CI runs the tests as root).
func chownOrSkip(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() == nobody {
		t.Skipf("SKIPPED, NOT TESTED: this process is uid %d, the other user these tests use", nobody)
	}
	if err := os.Lchown(path, nobody, nobody); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: cannot give %s to uid %d (run the tests as root): %v", path, nobody, err)
	}
}

func runsStored(t *testing.T, pool *pgxpool.Pool, job int64) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM probe_runs WHERE job_id = $1", job).Scan(&n))
	return n
}

// A spool directory that another user owns, that is a symbolic link, or that group or others may
// write is refused before anything is stored or claimed, by runs recover, run round and worker:
// exit 2 naming --spool-dir when the flag gave it, 3 when the default (XDG_STATE_HOME) did. The
// planted result is not stored.
func TestASpoolDirectoryAnotherUserCouldWriteIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// make returns the spool directory to give, with a planted result in what it names.
		make func(t *testing.T, line []byte) string
		want string
	}{
		{"owned by another user", func(t *testing.T, line []byte) string {
			dir := filepath.Join(t.TempDir(), "spool")
			require.NoError(t, os.Mkdir(dir, 0o700))
			file := filepath.Join(dir, "round-1-pid-1-00000000.jsonl")
			require.NoError(t, os.WriteFile(file, line, 0o600))
			chownOrSkip(t, file)
			chownOrSkip(t, dir)
			return dir
		}, fmt.Sprintf("is owned by uid %d", nobody)},
		{"a symbolic link to a directory", func(t *testing.T, line []byte) string {
			real := filepath.Join(t.TempDir(), "real")
			require.NoError(t, os.Mkdir(real, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(real, "round-1-pid-1-00000000.jsonl"), line, 0o600))
			link := filepath.Join(t.TempDir(), "spool")
			require.NoError(t, os.Symlink(real, link))
			return link
		}, "is a symbolic link"},
		{"writable by its group", func(t *testing.T, line []byte) string {
			dir := filepath.Join(t.TempDir(), "spool")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "round-1-pid-1-00000000.jsonl"), line, 0o600))
			require.NoError(t, os.Chmod(dir, 0o770))
			return dir
		}, "others may write it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url, pool := migratedDB(t)
			job, line := plantedResult(t, pool)
			dir := c.make(t, line)

			res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, "--spool-dir: spool directory "+dir+" ")
			require.Contains(t, res.Stderr, c.want)

			res = runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--spool-dir", dir)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, c.want)

			res = runCLI(t, "--database-url", url, "worker", "--unsigned", "--spool-dir", dir)
			require.Equal(t, 2, res.Code, "the worker stops before it fetches anything: %s", res.Stderr)
			require.Contains(t, res.Stderr, c.want)

			// The same directory as the default spool ($XDG_STATE_HOME/probectl): could not work.
			state := t.TempDir()
			require.NoError(t, os.Symlink(dir, filepath.Join(state, "probectl")))
			if c.name != "a symbolic link to a directory" {
				require.NoError(t, os.Remove(filepath.Join(state, "probectl")))
				require.NoError(t, os.Rename(dir, filepath.Join(state, "probectl")))
			}
			res = cli{env: map[string]string{"XDG_STATE_HOME": state}}.run(t, "--database-url", url, "runs", "recover")
			require.Equal(t, 3, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, c.want)

			require.Zero(t, runsStored(t, pool, job), "the planted result was not stored")
			var rounds int
			require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM probe_rounds").Scan(&rounds))
			require.Equal(t, 1, rounds, "no round started (the one there is the planted job's)")
		})
	}
}

// In the user's own spool directory, a file another user owns, one group or others may write, or a
// symbolic link is not replayed: it is named as a problem and kept for a person to read, and its
// result is not stored.
func TestASpoolFileThisUserDidNotWriteIsNotReplayed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// plant puts the line in dir as file.
		plant func(t *testing.T, dir, file string, line []byte)
		want  string
	}{
		{"owned by another user", func(t *testing.T, _, file string, line []byte) {
			require.NoError(t, os.WriteFile(file, line, 0o600))
			chownOrSkip(t, file)
		}, fmt.Sprintf("is owned by uid %d", nobody)},
		{"writable by its group", func(t *testing.T, _, file string, line []byte) {
			require.NoError(t, os.WriteFile(file, line, 0o600))
			require.NoError(t, os.Chmod(file, 0o660))
		}, "others may write it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url, pool := migratedDB(t)
			job, line := plantedResult(t, pool)
			dir := filepath.Join(t.TempDir(), "spool")
			require.NoError(t, os.Mkdir(dir, 0o700))
			file := filepath.Join(dir, "round-1-pid-1-00000000.jsonl")
			c.plant(t, dir, file, line)

			// A file a script's `runs recover` did not read may hold a result: not a success.
			rec := runsRecoverFailing(t, url, dir)
			require.Zero(t, rec.Stored)
			require.Zero(t, rec.Files)
			require.Len(t, rec.Problems, 1)
			require.Contains(t, rec.Problems[0], "spool file "+file+" ")
			require.Contains(t, rec.Problems[0], c.want)
			require.Contains(t, rec.Problems[0], "not replayed")
			require.FileExists(t, file, "kept for a person to read")
			require.Zero(t, runsStored(t, pool, job), "the planted result was not stored")
		})
	}
}
