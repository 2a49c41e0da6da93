package retention_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("retention_tmpl", testfactory.Migrate)

// day is the start of the UTC day of t.
func day(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// signedRuns stores, for each of days days back from now, one finished job of a server and its
// run signed with signer, in that day's partition (made by maintenance --from).
func signedRuns(t *testing.T, db queries.DB, signer *attest.Signer, days int) (server int64, runs []int64) {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC()
	_, err := queries.EnsurePartitions(ctx, db, day(now).Add(-time.Duration(days)*24*time.Hour), now, false)
	require.NoError(t, err)
	server = testfactory.Server(ctx, t, db, &testfactory.ServerOpts{Slug: "alpha", URL: "https://user:secret@alpha.example/mcp"})
	for d := days; d >= 3; d-- {
		at := day(now).Add(-time.Duration(d)*24*time.Hour + time.Hour)
		fin := at.Add(time.Second)
		job := testfactory.Job(ctx, t, db, &testfactory.JobOpts{ServerID: server, RequestedAt: &at, FinishedAt: &fin, Outcome: "ok"})
		res := check.Result{Outcome: "ok"}
		env, err := signer.Sign(attest.Run{JobID: job, ServerID: server, Slug: "alpha", URL: "https://user:secret@alpha.example/mcp",
			Kind: "http", Result: res})
		require.NoError(t, err)
		runs = append(runs, testfactory.Run(ctx, t, db, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &at,
			FinishedAt: &fin, Result: json.RawMessage(`{"outcome":"ok"}`), Envelope: env}))
	}
	return server, runs
}

func TestExportPruneVerifyOfflineAndShowAPrunedRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	pub, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	signer := attest.NewSigner(priv)
	server, runs := signedRuns(t, pool, signer, 10)
	now := time.Now().UTC()
	before := day(now).Add(-5 * 24 * time.Hour)

	// Nothing is dropped without an export.
	pruned, err := retention.Prune(ctx, pool, retention.Request{Before: before, Now: now})
	require.NoError(t, err)
	require.NotEmpty(t, pruned)
	for _, p := range pruned {
		require.True(t, p.Kept, "%s dropped without an export", p.RunsTable)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "runs.jsonl.gz")
	e, err := archive.Export(ctx, pool, archive.Request{Path: file, Before: before, Who: "tester"})
	require.NoError(t, err)
	require.EqualValues(t, 5, e.Runs) // days 10..6 back
	_, err = archive.Export(ctx, pool, archive.Request{Path: file, Before: before, Who: "tester"})
	require.ErrorIs(t, err, archive.ErrExists)

	pruned, err = retention.Prune(ctx, pool, retention.Request{Before: before, Now: now})
	require.NoError(t, err)
	dropped := 0
	for _, p := range pruned {
		require.False(t, p.Kept, "%s", p.RunsTable)
		require.Equal(t, e.ID, *p.ExportID)
		dropped++
	}
	require.Equal(t, 5, dropped)
	var left int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE server_id = $1", server).Scan(&left))
	require.Equal(t, len(runs)-5, left)

	// The archive verifies offline, with the public key alone.
	keys := map[string]ed25519.PublicKey{attest.KeyID(pub): pub}
	fh, err := os.Open(file)
	require.NoError(t, err)
	rep, err := archive.Verify(fh, keys, false)
	require.NoError(t, fh.Close())
	require.NoError(t, err)
	require.EqualValues(t, 5, rep.Signed)
	require.Equal(t, e.SHA256, rep.Manifest.SHA256)

	// runs show of a pruned run names its archive.
	_, err = history.ShowRun(ctx, pool, runs[0])
	var gone *history.PrunedError
	require.ErrorAs(t, err, &gone)
	require.Contains(t, gone.Error(), "runs.jsonl.gz")
	require.ErrorIs(t, err, queries.ErrNoRun)
	// a kept run still shows
	_, err = history.ShowRun(ctx, pool, runs[len(runs)-1])
	require.NoError(t, err)

	// The audit refuses a window reaching before what is kept.
	_, err = audit.Duplicates(ctx, pool, audit.DuplicatesParams{Since: before.Add(-24 * time.Hour), Window: 10 * time.Minute})
	var we *retention.WindowError
	require.ErrorAs(t, err, &we)
	_, err = audit.Duplicates(ctx, pool, audit.DuplicatesParams{Since: before, Window: 10 * time.Minute})
	require.NoError(t, err)

	// The rollups do not depend on the pruned rows: every run still counts in its day.
	var counted int
	require.NoError(t, pool.QueryRow(ctx, "SELECT sum(counted) FROM server_run_days WHERE server_id = $1", server).Scan(&counted))
	require.Equal(t, len(runs), counted)
}

func TestAnArchiveChangedAfterExportFailsOnItsFirstBadLine(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	pub, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	signedRuns(t, pool, attest.NewSigner(priv), 6)
	file := filepath.Join(t.TempDir(), "runs.jsonl")
	_, err = archive.Export(ctx, pool, archive.Request{Path: file, Before: day(time.Now()), Who: "tester"})
	require.NoError(t, err)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	keys := map[string]ed25519.PublicKey{attest.KeyID(pub): pub}
	verify := func(content string) error {
		_, err := archive.Verify(strings.NewReader(content), keys, false)
		return err
	}
	require.NoError(t, verify(string(data)))

	// The second line's job changed: its envelope is another job's.
	changed := append([]string(nil), lines...)
	changed[1] = strings.Replace(changed[1], `"job_id":`, `"job_id":9`, 1)
	var bad *archive.BadLineError
	require.ErrorAs(t, verify(strings.Join(changed, "")), &bad)
	require.Equal(t, 2, bad.Line)

	// A line dropped: the manifest's count and digest no longer match.
	require.ErrorAs(t, verify(lines[0]+strings.Join(lines[2:], "")), &bad)
	require.Contains(t, bad.Error(), "manifest")

	// Truncated: no manifest.
	require.ErrorAs(t, verify(strings.Join(lines[:len(lines)-2], "")), &bad)
	require.Contains(t, bad.Error(), "truncated")

	// Another key: the first line fails.
	other, _, err := attest.GenerateKey()
	require.NoError(t, err)
	_, err = archive.Verify(strings.NewReader(string(data)), map[string]ed25519.PublicKey{attest.KeyID(other): other}, false)
	require.ErrorAs(t, err, &bad)
	require.Equal(t, 1, bad.Line)
	require.True(t, errors.Is(err, attest.ErrUnknownKey))

	// The URL is redacted in the lines (the envelope carries it signed, as the run does).
	require.NotContains(t, lines[0][:strings.Index(lines[0], `"envelope"`)], "secret")
}

func TestPruneRefusesTheLastTwoDaysAndAnOpenJobsWindow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	now := time.Now().UTC()
	_, err := retention.Prune(ctx, pool, retention.Request{Before: day(now).Add(-24 * time.Hour), Now: now, WithoutExport: true})
	var refused *retention.RefusedError
	require.ErrorAs(t, err, &refused)
	require.Contains(t, refused.Error(), "last 2 days")

	_, err = queries.EnsurePartitions(ctx, pool, day(now).Add(-10*24*time.Hour), now, false)
	require.NoError(t, err)
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "bravo"})
	old := day(now).Add(-8 * 24 * time.Hour)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &old})
	_, err = retention.Prune(ctx, pool, retention.Request{Before: day(now).Add(-5 * 24 * time.Hour), Now: now, WithoutExport: true})
	require.ErrorAs(t, err, &refused)
	require.Contains(t, refused.Error(), "open job")
	var parts int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_partitions WHERE dropped_at IS NOT NULL").Scan(&parts))
	require.Zero(t, parts, "a refused prune drops nothing")
}

func TestTheDailyRetentionExportsThenPrunesOnlyWithAnArchiveDir(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	_, runs := signedRuns(t, pool, attest.NewSigner(priv), 10)
	now := time.Now().UTC()

	// Kept for ever (the default): nothing.
	res, err := retention.Auto(ctx, pool, now, t.TempDir())
	require.NoError(t, err)
	require.Nil(t, res.Export)
	require.Empty(t, res.Pruned)

	_, err = retention.Set(ctx, pool, retention.Change{Keep: testfactory.Ptr(2 * 24 * time.Hour)}, "tester")
	var se *retention.SettingError
	require.ErrorAs(t, err, &se, "under 3 days is refused")
	_, err = retention.Set(ctx, pool, retention.Change{Keep: testfactory.Ptr(5 * 24 * time.Hour)}, "tester")
	require.NoError(t, err)

	// No archive dir: nothing is pruned.
	res, err = retention.Auto(ctx, pool, now, "")
	require.NoError(t, err)
	require.Empty(t, res.Pruned)

	dir := t.TempDir()
	res, err = retention.Auto(ctx, pool, now, dir)
	require.NoError(t, err)
	require.NotNil(t, res.Export)
	require.EqualValues(t, 5, res.Export.Runs)
	require.Len(t, res.Pruned, 5)
	_, err = os.Stat(filepath.Join(dir, res.Export.FileName))
	require.NoError(t, err)
	_, err = history.ShowRun(ctx, pool, runs[0])
	var gone *history.PrunedError
	require.ErrorAs(t, err, &gone)

	// The next day's run finds nothing more to do.
	res, err = retention.Auto(ctx, pool, now, dir)
	require.NoError(t, err)
	require.Nil(t, res.Export)
	require.Empty(t, res.Pruned)
}

func TestServerFiguresKeepTheirThirtyDaysAfterAPrune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	server, runs := signedRuns(t, pool, attest.NewSigner(priv), 10)
	now := time.Now().UTC()
	// The figures as of the end of today: a pruned day counts whole in them (its rollup by day),
	// a kept one by its runs' times, so as of a time of day earlier than a run's (runs are made at
	// 01:00) the day at the 7-day window's edge would count that run before the prune and not
	// after (it failed from 00:00 to 01:00 UTC).
	at := day(now).Add(24*time.Hour - time.Second)
	before, err := queries.GetServerFigures(ctx, pool, server, at)
	require.NoError(t, err)
	require.EqualValues(t, len(runs), before.Counted30d)

	_, err = retention.Prune(ctx, pool, retention.Request{Before: day(now).Add(-5 * 24 * time.Hour), Now: now, WithoutExport: true})
	require.NoError(t, err)
	after, err := queries.GetServerFigures(ctx, pool, server, at)
	require.NoError(t, err)
	require.Equal(t, before.OK30d, after.OK30d)
	require.Equal(t, before.Counted30d, after.Counted30d)
	require.Equal(t, before.Counted7d, after.Counted7d)
}

// TestAZstdArchiveRoundTripsAndABadOneFailsNamingTheProblem: an export to FILE.zst is zstd (by its
// extension) and verifies offline; a corrupted or truncated one fails on a line naming zstd's
// complaint, and one whose frame asks for a window larger than archive.MaxZstdWindow is refused
// before the decoder takes that memory (an archive is input).
func TestAZstdArchiveRoundTripsAndABadOneFailsNamingTheProblem(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	pub, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	_, runs := signedRuns(t, pool, attest.NewSigner(priv), 8)
	file := filepath.Join(t.TempDir(), "runs.jsonl.zst")
	e, err := archive.Export(ctx, pool, archive.Request{Path: file, Before: day(time.Now()), Who: "tester"})
	require.NoError(t, err)
	require.EqualValues(t, len(runs), e.Runs)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, []byte{0x28, 0xb5, 0x2f, 0xfd}, data[:4], "zstd by the .zst extension")
	keys := map[string]ed25519.PublicKey{attest.KeyID(pub): pub}
	verify := func(content []byte) error {
		_, err := archive.Verify(bytes.NewReader(content), keys, false)
		return err
	}
	rep, err := archive.Verify(bytes.NewReader(data), keys, false)
	require.NoError(t, err)
	require.EqualValues(t, len(runs), rep.Signed)

	var bad *archive.BadLineError
	corrupt := bytes.Clone(data)
	corrupt[len(corrupt)/2] ^= 0xff
	require.ErrorAs(t, verify(corrupt), &bad)
	require.Contains(t, bad.Error(), "zstd")
	t.Logf("corrupted: %v", bad)

	require.ErrorAs(t, verify(data[:len(data)-10]), &bad)
	t.Logf("truncated: %v", bad)

	// A frame declaring a 64 MiB window: refused, naming the window.
	plain, err := os.ReadFile(file)
	require.NoError(t, err)
	var big bytes.Buffer
	zw, err := zstd.NewWriter(&big, zstd.WithWindowSize(64<<20), zstd.WithSingleSegment(false))
	require.NoError(t, err)
	dec, err := zstd.NewReader(bytes.NewReader(plain))
	require.NoError(t, err)
	_, err = io.Copy(zw, dec)
	dec.Close()
	require.NoError(t, err)
	require.NoError(t, zw.Flush(), "a streamed frame: its header declares the whole window")
	require.NoError(t, zw.Close())
	require.ErrorAs(t, verify(big.Bytes()), &bad)
	require.Contains(t, bad.Error(), "window")
	t.Logf("large window: %v", bad)
}

// TestRunFactsFindsEachRunsJobInItsOwnPartition: run_facts (what servers show and the server pages
// read) finds a run's job by its partition key, so reading one server's runs probes only the
// partitions of the days it has runs, not every partition of probe_jobs (by id alone the planner
// hashed every job: 110 ms instead of 4 ms for servers show at 100,000 runs, docs/retention.md).
func TestRunFactsFindsEachRunsJobInItsOwnPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	server, runs := signedRuns(t, pool, attest.NewSigner(priv), 8)
	_, err = pool.Exec(ctx, "ANALYZE")
	require.NoError(t, err)
	var plan []map[string]any
	require.NoError(t, pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*), count(*) FILTER (WHERE NOT probectl_fault)
		FROM run_facts WHERE server_id = $1 AND started_at > now() - interval '30 days'`, server).Scan(&plan))
	var partitions, touched int
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if rel, _ := n["Relation Name"].(string); strings.HasPrefix(rel, "probe_jobs") {
			partitions++
			if loops, _ := n["Actual Loops"].(float64); loops > 0 {
				touched++
			}
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	for _, p := range plan {
		walk(p["Plan"].(map[string]any))
	}
	t.Logf("probe_jobs partitions in the plan %d, read %d, for %d runs", partitions, touched, len(runs))
	require.Greater(t, partitions, len(runs), "more partitions than the days with runs")
	require.LessOrEqual(t, touched, len(runs), "a run's job looked up beyond its own partition")
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM run_facts WHERE server_id = $1", server).Scan(&n))
	require.Equal(t, len(runs), n, "every run still has its job")
}

// An export the database refuses to record leaves no archive behind: nothing was recorded, so a
// file at --out would be an export of nothing the database knows, and would refuse the next
// attempt ("exists already"). Here the database refuses the exporter's name (not UTF-8); the
// file goes, the temporary one too, and the next attempt writes and records it.
func TestAnExportTheDatabaseRefusesToRecordLeavesNoArchive(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	signedRuns(t, pool, attest.NewSigner(priv), 3)
	dir := t.TempDir()
	file := filepath.Join(dir, "runs.jsonl.gz")

	_, err = archive.Export(ctx, pool, archive.Request{Path: file, Before: day(time.Now()), Who: "bad\xff"})
	require.ErrorContains(t, err, "record export runs.jsonl.gz")
	require.NoFileExists(t, file)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file either")
	var exports int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_run_exports").Scan(&exports))
	require.Zero(t, exports)

	e, err := archive.Export(ctx, pool, archive.Request{Path: file, Before: day(time.Now()), Who: "tester"})
	require.NoError(t, err)
	require.Positive(t, e.Runs)
	require.FileExists(t, file)
}
