package queries_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// runsOnceCalls is how many times probe_runs_once ran in tx's session, as far as the session's
// pending statistics say (track_functions). Only differences within one transaction count: the
// pending counts may still hold the session's earlier transactions' calls (they are flushed when
// the session is idle, at most once a second), and are not flushed within a transaction.
func runsOnceCalls(t *testing.T, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions
		WHERE schemaname = 'public' AND funcname = 'probe_runs_once'`).Scan(&n))
	return n
}

// 00029: a batch's runs are not checked again, run by run, by probe_runs_once (probe_finish_many
// locked their jobs and looked their runs up first); every other finish's run still is, in the
// same transaction, after a batch as before one.
func TestTheRunsOnceTriggerSkipsABatchsRunsAndChecksEveryOtherFinishs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	due := time.Now().Add(-time.Minute)
	for range 4 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &due})
	}
	round := testfactory.Round(ctx, t, pool, nil)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 4})
	require.NoError(t, err)
	require.Len(t, jobs, 4)
	at := time.Now()

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // read and thrown away
	_, err = tx.Exec(ctx, "SET LOCAL track_functions = 'pl'")
	require.NoError(t, err)
	before := runsOnceCalls(t, tx)

	out, err := queries.FinishBatch(ctx, tx, []queries.FinishParams{finishParams(jobs[0], at), finishParams(jobs[1], at)})
	require.NoError(t, err)
	for _, o := range out {
		require.NoError(t, o.Err)
		require.NotZero(t, o.Result.RunID)
	}
	require.Equal(t, before, runsOnceCalls(t, tx), "a batch's runs")

	_, err = queries.FinishTx(ctx, tx, finishParams(jobs[2], at))
	require.NoError(t, err)
	require.Equal(t, before+1, runsOnceCalls(t, tx), "probe_finish's run")
	_, err = queries.FinishJob(ctx, tx, finishParams(jobs[3], at))
	require.NoError(t, err)
	require.Equal(t, before+2, runsOnceCalls(t, tx), "the advance-first finish's run")

	// The setting is the function's: once the batch has returned, nothing of it is left to the
	// transaction.
	var left *string
	require.NoError(t, tx.QueryRow(ctx, "SELECT nullif(current_setting('probectl.runs_once', true), '')").Scan(&left))
	require.Nil(t, left)
}

// claimDueNow claims one server due a minute ago, at the database's clock: its run's day has a
// partition of its own (made ahead at migration), away from the default one.
func claimDueNow(t *testing.T, db queries.DBTX) queries.ClaimedJob {
	t.Helper()
	ctx := t.Context()
	due := time.Now().Add(-time.Minute)
	testfactory.Server(ctx, t, db, &testfactory.ServerOpts{NextCheckAt: &due})
	round := testfactory.Round(ctx, t, db, nil)
	jobs, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: 1})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0]
}

func runsOfJob(t *testing.T, db queries.DBTX, job int64) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(t.Context(), "SELECT count(*) FROM probe_runs WHERE job_id = $1", job).Scan(&n))
	return n
}

// Without the trigger's check, a batch still stores no second run of a job whose run another path
// stored in another partition: the advance-first finish of the binary before 00017 keyed it NULL
// (the default partition), where the batch would store its run in the day's; it answers with
// that run.
func TestABatchStoresNoSecondRunOfAJobStoredInTheDefaultPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	j := claimDueNow(t, pool)
	at := time.Now()
	_, err := pool.Exec(ctx, previousFinishJob, j.JobID, "ok", "", at, at, 1, json.RawMessage(`{"outcome":"ok"}`), nil, nil)
	require.NoError(t, err)
	stored := runIDOf(t, pool, j.JobID)
	require.Equal(t, "probe_runs_default", partitionOf(t, pool, "probe_runs", stored))
	require.NotEqual(t, "probe_jobs_default", partitionOf(t, pool, "probe_jobs", j.JobID),
		"the job's day has partitions: a second run would land apart from the first")

	got, err := finishInBatch(t, pool, finishParams(j, at))
	require.NoError(t, err)
	require.Equal(t, stored, got.RunID, "the run stored first")
	require.Equal(t, 1, runsOfJob(t, pool, j.JobID))
}

// The batch's own lock of its jobs is what the trigger's was: a batch that meets a job whose run
// another finish is storing (here the NULL-keyed finish of the binary before 00017, not yet
// committed) waits for it, then answers with that run rather than store one of its own.
func TestABatchWaitsForAnotherFinishOfItsJobAndStoresNoSecondRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	j := claimDueNow(t, pool)
	at := time.Now()
	other, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(ctx) //nolint:errcheck // committed below
	_, err = other.Exec(ctx, previousFinishJob, j.JobID, "ok", "", at, at, 1, json.RawMessage(`{"outcome":"ok"}`), nil, nil)
	require.NoError(t, err)

	type answer struct {
		r   queries.FinishResult
		err error
	}
	batch := make(chan answer, 1)
	go func() {
		out, err := queries.FinishBatch(ctx, pool, []queries.FinishParams{finishParams(j, at)})
		if err == nil && len(out) == 1 {
			batch <- answer{out[0].Result, out[0].Err}
			return
		}
		batch <- answer{err: err}
	}()
	dbtest.WaitForLockWait(t, pool, "probe_finish_many", "the batch does not wait for the other finish of its job")
	require.NoError(t, other.Commit(ctx))
	got := <-batch
	require.NoError(t, got.err)
	require.Equal(t, runIDOf(t, pool, j.JobID), got.r.RunID, "the other finish's run")
	require.Equal(t, 1, runsOfJob(t, pool, j.JobID))
}

// 00029 rolls back and forth: down, the trigger checks a batch's runs again and the batch's
// function has no setting of it; up, as above. A batch finishes on either side.
func TestTheRunsOnceMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	batchCalls := func() int64 {
		t.Helper()
		j := claimDueNow(t, pool)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // committed below
		_, err = tx.Exec(ctx, "SET LOCAL track_functions = 'pl'")
		require.NoError(t, err)
		before := runsOnceCalls(t, tx)
		out, err := queries.FinishBatch(ctx, tx, []queries.FinishParams{finishParams(j, time.Now())})
		require.NoError(t, err)
		require.NoError(t, out[0].Err)
		n := runsOnceCalls(t, tx) - before
		require.NoError(t, tx.Commit(ctx))
		return n
	}
	require.Zero(t, batchCalls())
	_, err := p.DownTo(ctx, runsOnceVersion-1)
	require.NoError(t, err)
	require.Equal(t, int64(1), batchCalls(), "as 00028 left it")
	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.Zero(t, batchCalls())
}

const runsOnceVersion = 29

// 00029's DROP TRIGGER takes the whole runs table: behind a reader that holds it (a long audit),
// the migration gives up after its lock timeout and changes nothing, rather than queue every
// finish behind its wait; run again once the reader is done, it goes through.
func TestTheRunsOnceMigrationGivesUpBehindALongReader(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	_, err := p.DownTo(ctx, runsOnceVersion-1)
	require.NoError(t, err)
	reader, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer reader.Rollback(ctx) //nolint:errcheck // let go below
	_, err = reader.Exec(ctx, "SELECT 1 FROM probe_runs LIMIT 1")
	require.NoError(t, err)

	// bounded, so that a migration that waits on fails here rather than at the test's timeout
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = p.Up(wctx)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "55P03", pgErr.Code, "lock_not_available: %v", err)
	version, err := p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(runsOnceVersion-1), version, "nothing changed")

	require.NoError(t, reader.Rollback(ctx))
	_, err = p.Up(ctx)
	require.NoError(t, err)
}
