package retention_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/internal/schema"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// exportAndPrune stores signed runs over 10 days, exports the runs before 5 days back and prunes
// them; it returns the server, the runs, the export and the prune's day.
func exportAndPrune(t *testing.T, db queries.DB) (int64, []int64, queries.Export, time.Time) {
	t.Helper()
	ctx := t.Context()
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	server, runs := signedRuns(t, db, attest.NewSigner(priv), 10)
	now := time.Now().UTC()
	before := day(now).Add(-5 * 24 * time.Hour)
	e, err := archive.Export(ctx, db, archive.Request{Path: filepath.Join(t.TempDir(), "runs.jsonl.gz"), Before: before, Who: "tester"})
	require.NoError(t, err)
	pruned, err := retention.Prune(ctx, db, retention.Request{Before: before, Now: now})
	require.NoError(t, err)
	require.Len(t, pruned, 5)
	for _, p := range pruned {
		require.False(t, p.Kept, "%s", p.RunsTable)
	}
	return server, runs, e, before
}

// Review of 00017: `maintain --from` back into a pruned range made its partitions again under the
// same names and cleared the record of the prune, so `runs show` of a pruned run no longer named
// its archive and the audits' refusal moved back.
func TestMaintainFromIntoAPrunedRangeKeepsTheRecordOfThePrune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, runs, e, before := exportAndPrune(t, pool)
	now := time.Now().UTC()
	oldest, err := queries.OldestKept(ctx, pool)
	require.NoError(t, err)
	require.NotNil(t, oldest)

	from := day(now).Add(-12 * 24 * time.Hour)
	for _, dry := range []bool{true, false} {
		made, err := schema.Maintain(ctx, pool, now, from, dry)
		require.NoError(t, err)
		var skipped []queries.Partition
		for _, p := range made {
			if p.PrunedAt != nil {
				skipped = append(skipped, p)
				require.NotNil(t, p.ExportID, "%s", p.Table)
				require.Equal(t, e.ID, *p.ExportID)
				require.True(t, p.RangeTo.Compare(before) <= 0, "%s", p.Table)
			} else {
				// only the days before the pruned ones (12 and 11 back) and none of them
				require.True(t, p.RangeTo.Compare(day(now).Add(-10*24*time.Hour)) <= 0 || !p.RangeFrom.Before(before),
					"%s made again", p.Table)
			}
		}
		require.Len(t, skipped, 10, "5 pruned ranges, jobs and runs, dry run %v", dry) // said, not made
	}

	// The record of the prune stands.
	_, err = history.ShowRun(ctx, pool, runs[0])
	var gone *history.PrunedError
	require.ErrorAs(t, err, &gone)
	require.Contains(t, gone.Error(), "runs.jsonl.gz")
	// The days made before the pruned ones do not move where the kept runs begin: a window
	// reaching into the pruned days is still refused.
	again, err := queries.OldestKept(ctx, pool)
	require.NoError(t, err)
	require.NotNil(t, again)
	require.Equal(t, *oldest, *again)
	require.Equal(t, before, again.UTC())

	// The previous binary's maintenance (00017's function, its signature) passes over it too.
	_, err = pool.Exec(ctx, `SELECT count(*) FROM probe_partitions_ensure($1, $2)`, from, now)
	require.NoError(t, err)
	var cleared int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM probe_partitions
		WHERE range_from >= $1 AND range_to <= $2 AND dropped_at IS NULL`, day(now).Add(-10*24*time.Hour), before).Scan(&cleared))
	require.Zero(t, cleared)
}

// Review of 00017: a run stored in a range after the prune judged its export to cover the range
// (a late run, a replayed spool) was dropped with the partition, in no archive. The prune checks
// again once the partition is detached and leaves it attached.
func TestARunStoredAfterTheExportKeepsItsPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	server, _ := signedRuns(t, pool, attest.NewSigner(priv), 10)
	now := time.Now().UTC()
	before := day(now).Add(-5 * 24 * time.Hour)
	e, err := archive.Export(ctx, pool, archive.Request{Path: filepath.Join(t.TempDir(), "runs.jsonl.gz"), Before: before, Who: "tester"})
	require.NoError(t, err)

	// The prune lists the ranges covered; then a late run lands in the oldest of them, as it
	// would between the prune's check and its detach.
	ranges, err := queries.PrunablePartitions(ctx, pool, before)
	require.NoError(t, err)
	require.Len(t, ranges, 5)
	require.NotNil(t, ranges[0].ExportID)
	at := ranges[0].RangeFrom.Add(2 * time.Hour)
	fin := at.Add(time.Second)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &at, FinishedAt: &fin, Outcome: "ok"})
	late := testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &at, FinishedAt: &fin,
		Result: json.RawMessage(`{"outcome":"ok"}`)})
	require.Greater(t, late, *e.MaxRunID)

	_, err = queries.DetachPartition(ctx, pool, ranges[0].RunsTable, time.Second, ranges[0].ExportID)
	require.ErrorIs(t, err, queries.ErrRunAfterExport)
	var attached bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1))`,
		ranges[0].RunsTable).Scan(&attached))
	require.True(t, attached, "the detach was not undone")

	// A prune from now on finds the range not covered (its run ids pass the export's), keeps it
	// and drops the others.
	pruned, err := retention.Prune(ctx, pool, retention.Request{Before: before, Now: now})
	require.NoError(t, err)
	require.Len(t, pruned, 5)
	require.True(t, pruned[0].Kept)
	for _, p := range pruned[1:] {
		require.False(t, p.Kept, "%s", p.RunsTable)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM probe_runs WHERE id = $1`, late).Scan(&n))
	require.Equal(t, 1, n, "the late run was dropped")
}
