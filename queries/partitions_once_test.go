package queries_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// previousFinishJob is the advance-first FinishJob of the binary before 00017, which stores its
// run without job_requested_at (so in probe_runs_default).
const previousFinishJob = `
WITH finished AS (
    UPDATE probe_jobs AS j
       SET finished_at = coalesce($9::timestamptz, clock_timestamp()), outcome = $2, error = nullif($3, '')
     WHERE j.id = $1 AND j.finished_at IS NULL
    RETURNING j.id, j.finished_at
), run AS (
    INSERT INTO probe_runs (job_id, server_id, started_at, finished_at, requests, result, envelope, late)
    SELECT j.id, j.server_id, $4, $5, $6, $7, $8, j.finished_at IS NOT NULL
      FROM probe_jobs AS j
     WHERE j.id = $1
    RETURNING id
)
SELECT run.id AS run_id, false AS advanced, EXISTS (SELECT 1 FROM finished) AS job_finished,
       (SELECT f.finished_at FROM finished AS f) AS finished_at
  FROM run`

// Review of 00017: UNIQUE (job_id) is each partition's own, so a run the previous binary's
// advance-first finish stored (no key: the default partition) and a replay of the same job by
// this binary (keyed: the day's partition) were both stored; and a repeated write was refused
// under the partition's constraint name, which RunAlreadyStored does not know. probe_runs_once
// (00019) refuses any second run of a job as the unpartitioned table did.
func TestAJobHasOneRunWhicheverBinaryAndPartitionStoresIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	due := time.Now().Add(-time.Minute)
	for range 3 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &due})
	}
	round := testfactory.Round(ctx, t, pool, nil)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 3})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	now := time.Now()
	result := json.RawMessage(`{"outcome":"ok"}`)
	previous := func(job int64) error {
		_, err := pool.Exec(ctx, previousFinishJob, job, "ok", "", now, now, 1, result, nil, nil)
		return err
	}
	current := func(j queries.ClaimedJob) error {
		_, err := queries.FinishJob(ctx, pool, queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID, Outcome: "ok",
			StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: result, RequestedAt: &j.RequestedAt})
		return err
	}
	runs := func(job int64) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE job_id = $1", job).Scan(&n))
		return n
	}

	// the previous binary first, then this one
	require.NoError(t, previous(jobs[0].JobID))
	require.Equal(t, "probe_runs_default", partitionOf(t, pool, "probe_runs", runIDOf(t, pool, jobs[0].JobID)))
	err = current(jobs[0])
	require.True(t, queries.RunAlreadyStored(err), "%v", err)
	require.Equal(t, 1, runs(jobs[0].JobID))

	// this binary first, then the previous one
	require.NoError(t, current(jobs[1]))
	err = previous(jobs[1].JobID)
	require.True(t, queries.RunAlreadyStored(err), "%v", err)
	require.Equal(t, 1, runs(jobs[1].JobID))

	// twice by each: refused as the unpartitioned table refused it
	require.NoError(t, current(jobs[2]))
	require.True(t, queries.RunAlreadyStored(current(jobs[2])))
	require.True(t, queries.RunAlreadyStored(previous(jobs[0].JobID)))
	require.Equal(t, 1, runs(jobs[2].JobID))
}

func runIDOf(t *testing.T, db queries.DBTX, job int64) int64 {
	t.Helper()
	var id int64
	require.NoError(t, db.QueryRow(t.Context(), "SELECT id FROM probe_runs WHERE job_id = $1", job).Scan(&id))
	return id
}
