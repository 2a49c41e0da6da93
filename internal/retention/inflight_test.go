package retention_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// Review of 00017: an export is judged to cover a partition when no run of it has an id above the
// export's largest. A run whose id was drawn before the export read its runs, and that committed
// after, has an id below it and is in no archive: the prune dropped it. The export now waits for
// the transactions running when it starts, and reaches no further than the ids drawn by then.
func TestARunCommittedDuringTheExportIsInTheArchiveOrItsPartitionIsKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	server, _ := signedRuns(t, pool, attest.NewSigner(priv), 10)
	now := time.Now().UTC()
	before := day(now).Add(-5 * 24 * time.Hour)
	at := day(now).Add(-8*24*time.Hour + 3*time.Hour)
	fin := at.Add(time.Second)
	// (another server for each: the rollup trigger locks a server's rows until its run commits)
	other := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "beta"})
	store := func(db queries.DBTX, server int64) int64 {
		job := testfactory.Job(ctx, t, db, &testfactory.JobOpts{ServerID: server, RequestedAt: &at, FinishedAt: &fin, Outcome: "ok"})
		return testfactory.Run(ctx, t, db, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &at, FinishedAt: &fin,
			Result: json.RawMessage(`{"outcome":"ok"}`)})
	}
	// A late finish draws its run's id and has not committed; a later one has.
	late, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer late.Rollback(ctx) //nolint:errcheck // committed below
	first := store(late, server)
	second := store(pool, other)
	require.Greater(t, second, first)

	type exported struct {
		e   queries.Export
		err error
	}
	done := make(chan exported, 1)
	go func() {
		e, err := archive.Export(ctx, pool, archive.Request{Path: filepath.Join(t.TempDir(), "runs.jsonl.gz"), Before: before, Who: "tester"})
		done <- exported{e, err}
	}()
	// Commit once the export waits for it, or once it is done.
	var res *exported
	require.Eventually(t, func() bool {
		select {
		case r := <-done:
			res = &r
			return true
		default:
		}
		// The pattern is split so that this query, idle on a pooled connection, never matches itself.
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%virtualxid = ' || 'ANY%'`).Scan(&n)
		return err == nil && n > 0
	}, 30*time.Second, 2*time.Millisecond)
	require.NoError(t, late.Commit(ctx))
	if res == nil {
		r := <-done
		res = &r
	}
	require.NoError(t, res.err)

	ranges, err := queries.PrunablePartitions(ctx, pool, before)
	require.NoError(t, err)
	var covered bool
	for _, r := range ranges {
		if r.RangeFrom != nil && !at.Before(*r.RangeFrom) && at.Before(r.RangeTo) {
			covered = r.ExportID != nil && *r.ExportID == res.e.ID
		}
	}
	inArchive := res.e.Runs == 7 // days 10..6 back, and both late runs
	require.True(t, inArchive || !covered, "run %d is in no archive, and its partition is covered by export %d (%d runs, up to run %d)",
		first, res.e.ID, res.e.Runs, *res.e.MaxRunID)
	require.True(t, inArchive, "the export did not wait for the late finish")
}

// An export does not wait for a transaction that only reads (a backup's snapshot, a forgotten
// BEGIN in psql): it cannot hold a run id drawn and not committed. Waiting for it failed the
// export, and the worker's daily retention with it, after a minute.
func TestAnExportDoesNotWaitForATransactionThatOnlyReads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	signedRuns(t, pool, attest.NewSigner(priv), 10)
	reader, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer reader.Rollback(ctx) //nolint:errcheck // only read
	var one int
	require.NoError(t, reader.QueryRow(ctx, "SELECT 1").Scan(&one))

	ectx, cancel := context.WithTimeout(ctx, 15*time.Second) // well under the export's own minute
	defer cancel()
	_, err = archive.Export(ectx, pool, archive.Request{Path: filepath.Join(t.TempDir(), "runs.jsonl.gz"),
		Before: day(time.Now().UTC()).Add(-5 * 24 * time.Hour), Who: "tester"})
	require.NoError(t, err)
}
