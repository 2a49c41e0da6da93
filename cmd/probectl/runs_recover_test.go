package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// A result a round spooled shows in status (table and JSON) until runs recover stores it, once.
func TestStatusShowsTheSpoolUntilRunsRecoverStoresIt(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	dir, _, job := spooledResult(t, pool, "")

	res := runCLI(t, "--database-url", url, "status", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "SPOOL")
	require.Contains(t, res.Stdout, "1 result(s) in 1 file(s) in "+dir)
	require.Equal(t, map[string]any{"dir": dir, "files": 1.0, "results": 1.0, "set_aside": 0.0}, statusSpool(t, url, dir))

	res = runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rec))
	require.Equal(t, map[string]any{"dir": dir, "files": 1.0, "stored": 1.0, "already_stored": 0.0, "restored": 0.0, "busy": 0.0,
		"left": 0.0, "problems": []any{}, "set_aside": []any{}}, rec)
	var runs int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE job_id = $1", job).Scan(&runs))
	require.Equal(t, 1, runs)

	res = runCLI(t, "--database-url", url, "status", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NotContains(t, res.Stdout, "SPOOL")
}

// A spool directory others may write is refused before anything is claimed: they could plant
// results for the next replay.
func TestRunsRecoverRefusesASpoolOthersMayWrite(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
	require.Equal(t, 2, res.Code, res.Stderr) // --spool-dir named it: bad input
	require.Contains(t, res.Stderr, "others may write it")
}

// A failover journal or spool file set aside for a person to read shows in status until a person
// removes it.
func TestStatusShowsAFileSetAsideUntilItIsRemoved(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	aside := filepath.Join(dir, "journal-tl1-round-1-pid-1-00000000.journal.bad")
	require.NoError(t, os.WriteFile(aside, []byte(`{"job_`), 0o600))
	spoolAside := filepath.Join(dir, "round-1-pid-1-00000000.jsonl.bad")
	require.NoError(t, os.WriteFile(spoolAside, []byte(`{"job_`), 0o600))

	res := runCLI(t, "--database-url", url, "status", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "SPOOL")
	require.Contains(t, res.Stdout, "2 file(s) set aside in "+dir)
	require.NotContains(t, res.Stdout, "could not be stored")
	require.Equal(t, map[string]any{"dir": dir, "files": 0.0, "results": 0.0, "set_aside": 2.0}, statusSpool(t, url, dir))

	require.NoError(t, os.Remove(aside))
	require.NoError(t, os.Remove(spoolAside))
	res = runCLI(t, "--database-url", url, "status", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NotContains(t, res.Stdout, "SPOOL")
}

// statusSpool is status -o json's spool for the spool directory dir.
func statusSpool(t *testing.T, url, dir string) map[string]any {
	t.Helper()
	res := runCLI(t, "--database-url", url, "status", "--spool-dir", dir, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Spool map[string]any `json:"spool"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	return got.Spool
}

// spooledResult writes, in a new spool directory, the spool file of a round that could not store
// the result of a job it claimed, then the text after (a line cut short, say), and returns the
// directory, the file and the job.
func spooledResult(t *testing.T, pool *pgxpool.Pool, after string) (dir, file string, job int64) {
	t.Helper()
	ctx := context.Background()
	srv := testfactory.Server(ctx, t, pool, nil)
	round := testfactory.Round(ctx, t, pool, nil)
	job = testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	dir = filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	file = filepath.Join(dir, fmt.Sprintf("round-%d-pid-1-00000000.jsonl", round))
	line := testfactory.SpoolLine(ctx, t, pool, round, srv, job, map[string]any{"outcome": "ok"}, "finish job: connection refused")
	require.NoError(t, os.WriteFile(file, append(line, after...), 0o600))
	return dir, file, job
}

// runs recover stores what a spool file holds and sets the file aside for its line cut short: it
// exits 0, says the file once in set_aside, and status shows it until a person removes it.
func TestRunsRecoverSetsASpoolFileWithACutLineAside(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	dir, file, _ := spooledResult(t, pool, `{"job_id":4`)
	name := filepath.Base(file)

	res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rec))
	require.Equal(t, map[string]any{"dir": dir, "files": 0.0, "stored": 1.0, "already_stored": 0.0, "restored": 0.0,
		"busy": 0.0, "left": 0.0, "problems": []any{}, "set_aside": []any{name + " is set aside as " + name +
			".bad for a person to read (1 of its results stored, or there already): line 2 does not hold a result"}}, rec)
	require.Equal(t, map[string]any{"dir": dir, "files": 0.0, "results": 0.0, "set_aside": 1.0}, statusSpool(t, url, dir))

	res = runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "0 stored (0 restored), 0 already stored, 0 file(s) replayed, 0 busy, 0 left")
	require.Empty(t, res.Stderr, "said once")
}

// A spool file that cannot be set aside (a person's copy holds its .bad name) stays, and runs
// recover says so and exits 3, as run round's replay fails its round: a script that reads the exit
// code must not take it for a spool emptied. The copy is not touched.
func TestRunsRecoverFailsWhenASpoolFileCannotBeSetAside(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	dir, file, _ := spooledResult(t, pool, `{"job_id":4`)
	require.NoError(t, os.WriteFile(file+".bad", []byte("a person's copy\n"), 0o600))

	rec := runsRecoverFailing(t, url, dir)
	require.Equal(t, 1, rec.Stored)
	require.Zero(t, rec.Left, "the cut line is no result")
	require.Len(t, rec.Problems, 1)
	require.Contains(t, rec.Problems[0], "line 2 does not hold a result")
	require.FileExists(t, file, "kept where the next replay reads it")
	copied, err := os.ReadFile(file + ".bad")
	require.NoError(t, err)
	require.Equal(t, "a person's copy\n", string(copied))
}

// runsRecoverFailing runs `runs recover -o json` over dir, which must exit 3 for one problem in the
// spool, and returns its answer.
func runsRecoverFailing(t *testing.T, url, dir string) recoveryJSON {
	t.Helper()
	res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir, "-o", "json")
	require.Equal(t, 3, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "1 problem(s) in the spool")
	var rec recoveryJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rec), res.Stdout)
	return rec
}
