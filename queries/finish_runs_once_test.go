package queries_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

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

// Without the trigger's check, a batch still stores no second run of a job whose run another path
// stored in another partition: the previous binary's advance-first finish keyed it NULL (the
// default partition), and the batch answers with that run.
func TestABatchStoresNoSecondRunOfAJobStoredInTheDefaultPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	j, _ := claimOne(t, pool)
	at := time.Now()
	_, err := pool.Exec(ctx, previousFinishJob, j.JobID, "ok", "", at, at, 1, json.RawMessage(`{"outcome":"ok"}`), nil, nil)
	require.NoError(t, err)
	stored := runIDOf(t, pool, j.JobID)
	require.Equal(t, "probe_runs_default", partitionOf(t, pool, "probe_runs", stored))

	got, err := finishInBatch(t, pool, finishParams(j, at))
	require.NoError(t, err)
	require.Equal(t, stored, got.RunID, "the run stored first")
	var runs int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE job_id = $1", j.JobID).Scan(&runs))
	require.Equal(t, 1, runs)
}

// 00029 rolls back and forth: down, the trigger checks a batch's runs again and the batch's
// function has no setting of it; up, as above. A batch finishes on either side.
func TestTheRunsOnceMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	batchCalls := func() int64 {
		t.Helper()
		due := time.Now().Add(-time.Minute)
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &due})
		round := testfactory.Round(ctx, t, pool, nil)
		jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 1})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // committed below
		_, err = tx.Exec(ctx, "SET LOCAL track_functions = 'pl'")
		require.NoError(t, err)
		before := runsOnceCalls(t, tx)
		out, err := queries.FinishBatch(ctx, tx, []queries.FinishParams{finishParams(jobs[0], time.Now())})
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
