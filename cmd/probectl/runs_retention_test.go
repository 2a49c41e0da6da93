package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
)

// TestMaintainExportPruneVerifyAndShowFromTheCommandLine: the retention commands end to end, with
// their exit codes: maintain makes the past days' partitions, prune keeps what no export covers,
// export writes the archive, prune drops, verify checks the archive offline (and names the first
// bad line of a changed one), runs show and audit duplicates say what was pruned.
func TestMaintainExportPruneVerifyAndShowFromTheCommandLine(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, pool := migratedDB(t)
	key := filepath.Join(t.TempDir(), "probe.key")
	res := runCLI(t, "--database-url", url, "keys", "generate", "--out", key)
	require.Equal(t, 0, res.Code, res.Stderr)
	signer, err := attest.LoadSigner(key)
	require.NoError(t, err)
	pem := filepath.Join(t.TempDir(), "probe.pub")
	res = runCLI(t, "--database-url", url, "keys", "export", signer.KeyID())
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, os.WriteFile(pem, []byte(res.Stdout), 0o600))

	today := time.Now().UTC().Truncate(24 * time.Hour)
	res = runCLI(t, "--database-url", url, "maintain", "--from", today.Add(-10*24*time.Hour).Format(time.DateOnly))
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "probe_runs_p"+today.Add(-10*24*time.Hour).Format("20060102"))
	res = runCLI(t, "--database-url", url, "maintain")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "nothing to do")
	res = runCLI(t, "--database-url", url, "maintain", "--dry-run", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.JSONEq(t, `{"partitions": [], "dry_run": true}`, res.Stdout, "[] for a script, not null")

	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "alpha", URL: "https://alpha.example/"})
	var runs []int64
	for d := 10; d >= 6; d-- {
		at := today.Add(-time.Duration(d)*24*time.Hour + time.Hour)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &at, FinishedAt: &at, Outcome: "ok"})
		env, err := signer.Sign(attest.Run{JobID: job, ServerID: server, Slug: "alpha", URL: "https://alpha.example/", Kind: "http",
			Result: check.Result{Outcome: "ok"}})
		require.NoError(t, err)
		runs = append(runs, testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &at,
			FinishedAt: &at, Result: json.RawMessage(`{"outcome":"ok"}`), Envelope: env}))
	}
	before := today.Add(-5 * 24 * time.Hour).Format(time.DateOnly)

	res = runCLI(t, "--database-url", url, "runs", "prune", "--before", today.Add(-24*time.Hour).Format(time.DateOnly))
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "last 2 days")
	res = runCLI(t, "--database-url", url, "runs", "prune", "--before", before)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "kept: no export covers it")
	require.Contains(t, res.Stdout, "dropped 0 of 5")

	archive := filepath.Join(t.TempDir(), "runs.jsonl.gz")
	res = runCLI(t, "--database-url", url, "runs", "export", "--before", before, "--out", archive)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "exported 5 run(s)")
	require.Regexp(t, `in \d+(\.\d+)?s \(export`, res.Stdout, "how long it took, as every table says a duration (not Go's 12ms)")
	res = runCLI(t, "--database-url", url, "runs", "export", "--before", before, "--out", archive)
	require.Equal(t, 2, res.Code, "an archive is never overwritten")

	// A changed archive: exit 1, the first bad line named.
	plain := filepath.Join(t.TempDir(), "runs.jsonl")
	res = runCLI(t, "--database-url", url, "runs", "export", "--before", before, "--out", plain)
	require.Equal(t, 0, res.Code, res.Stderr)
	data, err := os.ReadFile(plain)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(plain, []byte(strings.Replace(string(data), `"server":"alpha"`, `"server":"bravo"`, 1)), 0o600))
	res = runCLI(t, "runs", "verify", "--archive", plain, "--public-key", pem)
	require.Equal(t, 1, res.Code, res.Stdout+res.Stderr)
	require.Contains(t, res.Stdout, "line 1")

	res = runCLI(t, "--database-url", url, "runs", "prune", "--before", before, "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "would drop")
	require.Contains(t, res.Stdout, "would drop 5 of 5 range(s)", "a dry run drops nothing, and says what it would")
	res = runCLI(t, "--database-url", url, "runs", "prune", "--before", before)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "dropped 5 of 5")

	// Offline: no --database-url.
	res = runCLI(t, "runs", "verify", "--archive", archive, "--public-key", pem)
	require.Equal(t, 0, res.Code, res.Stdout+res.Stderr)
	require.Contains(t, res.Stdout, "VALID")
	require.Contains(t, res.Stdout, "5 run(s) (5 signed, 0 unsigned)")

	res = runCLI(t, "--database-url", url, "runs", "show", strconv.FormatInt(runs[0], 10))
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "was pruned")
	require.Contains(t, res.Stderr, "archive runs.jsonl") // the newest export covering it

	res = runCLI(t, "--database-url", url, "audit", "duplicates", "--since", "9d")
	require.Equal(t, 2, res.Code, res.Stdout)
	require.Contains(t, res.Stderr, "oldest kept")

	res = runCLI(t, "--database-url", url, "runs", "retention", "set", "--keep", "90d")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "runs kept: 90d")
	res = runCLI(t, "--database-url", url, "runs", "retention", "set", "--unit", "week")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "runs kept: 90d; partitions: one a week\n", res.Stdout, "--unit alone leaves the keep")
	res = runCLI(t, "--database-url", url, "runs", "retention", "set", "--keep", "1d")
	require.Equal(t, 2, res.Code)
}
