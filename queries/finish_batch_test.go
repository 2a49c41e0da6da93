package queries_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// One batch holding every case a finish meets answers each job as a finish of its own would
// (FinishTx): on time, after a re-check, after its job was closed as abandoned, a replay of a
// finish already stored, and a claim the database does not hold as named. The last stores nothing
// and is answered ErrClaimGone; the others are stored all the same.
func TestABatchAnswersEachJobAsItsOwnFinishWould(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	at := now.Add(3 * time.Second)

	onTime, _ := claimOne(t, pool)
	rechecked, _ := claimOne(t, pool)
	recheck := now.Add(time.Second)
	_, err := queries.RecheckServer(ctx, pool, rechecked.Slug, &recheck)
	require.NoError(t, err)
	abandoned, round := claimOne(t, pool)
	later := now.Add(16 * time.Minute)
	_, err = queries.CloseAbandoned(ctx, pool, queries.InFlightWindow, &later) // as a round's start does
	require.NoError(t, err)
	again, err := queries.Claim(ctx, pool, queries.ClaimParams{Limit: 3, MinSpacing: 10 * time.Minute, Now: &later, RoundID: round})
	require.NoError(t, err)
	require.NotEmpty(t, again) // the jobs above are all past their window now, and closed as abandoned
	replayed, _ := claimOne(t, pool)
	stored, err := queries.FinishTx(ctx, pool, finishParams(replayed, at))
	require.NoError(t, err)
	gone, _ := claimOne(t, pool)
	goneP := finishParams(gone, at)
	wrongTime := gone.RequestedAt.Add(time.Second)
	goneP.RequestedAt = &wrongTime // the id of another claim after a failover

	ps := []queries.FinishParams{finishParams(onTime, at), finishParams(rechecked, at), finishParams(abandoned, at),
		finishParams(replayed, at), goneP}
	out, err := queries.FinishBatch(ctx, pool, ps)
	require.NoError(t, err)
	require.Len(t, out, len(ps))
	for i := range 4 {
		require.NoError(t, out[i].Err, "job %d", ps[i].JobID)
	}
	require.ErrorIs(t, out[4].Err, queries.ErrClaimGone)

	// onTime, rechecked and abandoned were all claimed at now and closed as abandoned by the
	// later claim (their window ended): each is a late finish, stored late, advancing nothing.
	for _, i := range []int{0, 1, 2} {
		require.False(t, out[i].Result.JobFinished, "job %d", ps[i].JobID)
		require.False(t, out[i].Result.Advanced, "job %d", ps[i].JobID)
		var late bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT late FROM probe_runs WHERE id = $1", out[i].Result.RunID).Scan(&late))
		require.True(t, late)
	}
	require.Equal(t, stored.RunID, out[3].Result.RunID, "the replay names the run already stored")
	require.False(t, out[3].Result.JobFinished)
	require.False(t, out[3].Result.Advanced)
	var runs int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE job_id = ANY ($1)",
		[]int64{replayed.JobID, gone.JobID}).Scan(&runs))
	require.Equal(t, 1, runs, "nothing stored twice, nothing stored for the claim that is gone")
}

// A batch of jobs on time: each advanced, stored and closed, and a re-checked server's
// compare-and-set misses alone.
func TestABatchOnTimeAdvancesEachServerAndMissesARecheck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	at := now.Add(3 * time.Second)
	a, _ := claimOne(t, pool)
	b, _ := claimOne(t, pool)
	recheck := now.Add(time.Second)
	_, err := queries.RecheckServer(ctx, pool, b.Slug, &recheck)
	require.NoError(t, err)
	c, _ := claimOne(t, pool)
	out, err := queries.FinishBatch(ctx, pool, []queries.FinishParams{finishParams(a, at), finishParams(b, at), finishParams(c, at)})
	require.NoError(t, err)
	for i, want := range []bool{true, false, true} {
		require.NoError(t, out[i].Err)
		require.True(t, out[i].Result.JobFinished)
		require.Equal(t, want, out[i].Result.Advanced, "answer %d", i)
		require.Equal(t, at, out[i].Result.FinishedAt.UTC())
	}
	s, err := queries.GetServerBySlug(ctx, pool, b.Slug)
	require.NoError(t, err)
	require.Equal(t, recheck, s.NextCheckAt.UTC(), "the re-check's next check time stands")
}

// A batch that names a job twice, or a job without its claim time, is not sent.
func TestABatchOfTheWrongShapeIsNotSent(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	j, _ := claimOne(t, pool)
	p := finishParams(j, now)
	_, err := queries.FinishBatch(t.Context(), pool, []queries.FinishParams{p, p})
	require.ErrorIs(t, err, queries.ErrBatchShape)
	p.RequestedAt = nil
	_, err = queries.FinishBatch(t.Context(), pool, []queries.FinishParams{p})
	require.ErrorIs(t, err, queries.ErrBatchShape)
}

// probe_finish_many itself refuses a batch that names a job twice, a job without its claim time,
// or arrays of different lengths, whoever calls it: nothing is written.
func TestProbeFinishManyRefusesABatchOfTheWrongShape(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	j, _ := claimOne(t, pool)
	call := func(jobs []int64, requested []*time.Time, servers []int64) error {
		n := len(jobs)
		times := make([]time.Time, n)
		texts := make([]string, n)
		for i := range times {
			times[i], texts[i] = now, "ok"
		}
		_, err := pool.Exec(ctx, `SELECT * FROM probe_finish_many($1, $2, $3, $4, $5, $6, $7, $8, $9,
			array_fill('{"outcome":"ok"}'::jsonb, ARRAY[$10::int]), array_fill(NULL::jsonb, ARRAY[$10::int]))`,
			jobs, servers, requested, times, texts, texts, times, times, make([]int32, n), n)
		return err
	}
	for name, err := range map[string]error{
		"twice":         call([]int64{j.JobID, j.JobID}, []*time.Time{&j.RequestedAt, &j.RequestedAt}, []int64{j.ServerID, j.ServerID}),
		"no claim time": call([]int64{j.JobID}, []*time.Time{nil}, []int64{j.ServerID}),
		"lengths":       call([]int64{j.JobID}, []*time.Time{&j.RequestedAt}, []int64{j.ServerID, j.ServerID}),
	} {
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, "22023", pgErr.Code, name)
	}
	var runs int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE job_id = $1", j.JobID).Scan(&runs))
	require.Zero(t, runs)
}

// A job that holds two runs (one keyed, one stored by a previous binary's advance-first finish in
// the default partition before 00019's probe_runs_once) replays in a batch as the first of them:
// its lookup asked for one row and failed the whole batch.
func TestABatchReplaysAJobThatHoldsTwoRuns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	day := now.Truncate(24 * time.Hour)
	_, err := queries.EnsurePartitions(ctx, pool, day, day.Add(24*time.Hour), false) // the first run's day
	require.NoError(t, err)
	j, _ := claimOne(t, pool)
	p := finishParams(j, now.Add(3*time.Second))
	first, err := queries.FinishTx(ctx, pool, p)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	_, err = tx.Exec(ctx, "ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_once")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result)
		SELECT job_id, NULL, server_id, started_at, finished_at, requests, result FROM probe_runs WHERE id = $1`, first.RunID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_once")
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	got, err := queries.FinishBatch(ctx, pool, []queries.FinishParams{p})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	require.Equal(t, first.RunID, got[0].Result.RunID, "the run stored first")
}
