package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// A result a round spooled shows in status (table and JSON) until runs recover stores it, once.
func TestStatusShowsTheSpoolUntilRunsRecoverStoresIt(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	srv := testfactory.Server(ctx, t, pool, nil)
	round := testfactory.Round(ctx, t, pool, nil)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	var claimed time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT next_check_at FROM servers WHERE id = $1", srv).Scan(&claimed))

	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	now := time.Now().UTC()
	line, err := json.Marshal(map[string]any{"round_id": round, "slug": "s", "finish": "tx", "job_id": job,
		"server_id": srv, "claimed_next_check_at": claimed, "outcome": "ok", "started_at": now,
		"check_finished_at": now, "requests": 1, "result": map[string]any{"outcome": "ok"}, "spooled_at": now,
		"cause": "finish job: connection refused"})
	require.NoError(t, err)
	file := filepath.Join(dir, fmt.Sprintf("round-%d-pid-1-00000000.jsonl", round))
	require.NoError(t, os.WriteFile(file, append(line, '\n'), 0o600))

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
