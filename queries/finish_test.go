package queries_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// claimOne makes one due server (interval 12h) and claims it at now.
func claimOne(t *testing.T, db queries.DBTX) (queries.ClaimedJob, int64) {
	t.Helper()
	ctx := t.Context()
	testfactory.Server(ctx, t, db, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
	round := testfactory.Round(ctx, t, db, nil)
	jobs, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: 1, MinSpacing: 10 * time.Minute, Now: &now})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0], round
}

func finishParams(j queries.ClaimedJob, at time.Time) queries.FinishParams {
	return queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID, ClaimedNextCheckAt: j.ClaimedNextCheckAt,
		Outcome: "ok", StartedAt: at.Add(-time.Second), CheckFinishedAt: at, Requests: 2,
		Result: json.RawMessage(`{"outcome":"ok"}`), Envelope: json.RawMessage(`{"payloadType":"x"}`), Now: &at,
		RequestedAt: &j.RequestedAt}
}

// finishInBatch finishes p in a batch of one (queries.FinishBatch).
func finishInBatch(t *testing.T, db queries.DBTX, p queries.FinishParams) (queries.FinishResult, error) {
	out, err := queries.FinishBatch(t.Context(), db, []queries.FinishParams{p})
	require.NoError(t, err)
	require.Len(t, out, 1)
	return out[0].Result, out[0].Err
}

// claimAndFinishOne claims one new server and finishes its job in a batch: what the migrations'
// rollback tests ask of each side of a migration.
func claimAndFinishOne(t *testing.T, db queries.DBTX) {
	t.Helper()
	j, _ := claimOne(t, db)
	r, err := finishInBatch(t, db, finishParams(j, now.Add(time.Second)))
	require.NoError(t, err)
	require.Positive(t, r.RunID)
}

// finishers are the two ways to finish, as the round calls them.
var finishers = []struct {
	name   string
	finish func(t *testing.T, db queries.DBTX, p queries.FinishParams) queries.FinishResult
}{
	{"in one transaction", func(t *testing.T, db queries.DBTX, p queries.FinishParams) queries.FinishResult {
		r, err := queries.FinishTx(t.Context(), db, p)
		require.NoError(t, err)
		return r
	}},
	{"advance first, then the job", func(t *testing.T, db queries.DBTX, p queries.FinishParams) queries.FinishResult {
		advanced, err := queries.AdvanceServer(t.Context(), db, p.JobID, p.ServerID, p.ClaimedNextCheckAt, p.Now)
		require.NoError(t, err)
		r, err := queries.FinishJob(t.Context(), db, p)
		require.NoError(t, err)
		r.Advanced = advanced
		return r
	}},
	{"in a batch", func(t *testing.T, db queries.DBTX, p queries.FinishParams) queries.FinishResult {
		r, err := finishInBatch(t, db, p)
		require.NoError(t, err)
		return r
	}},
}

func TestAFinishAdvancesStoresTheRunAndClosesTheJob(t *testing.T) {
	t.Parallel()
	for _, f := range finishers {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := migrated.Pool(t)
			j, round := claimOne(t, pool)
			at := now.Add(3 * time.Second)
			r := f.finish(t, pool, finishParams(j, at))
			require.True(t, r.Advanced)
			require.True(t, r.JobFinished)
			require.NotZero(t, r.RunID)
			require.Equal(t, at, r.FinishedAt.UTC())

			s, err := queries.GetServerBySlug(ctx, pool, j.Slug)
			require.NoError(t, err)
			require.Equal(t, at.Add(12*time.Hour), s.NextCheckAt.UTC())
			jobs, err := queries.ListRoundJobs(ctx, pool, round)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			require.Equal(t, "ok", *jobs[0].Outcome)
			require.Equal(t, r.RunID, *jobs[0].RunID)
			require.JSONEq(t, `{"payloadType":"x"}`, string(jobs[0].Envelope))
		})
	}
}

func TestAFinishThatRacesARecheckLeavesTheRecheckAndSaysSo(t *testing.T) {
	t.Parallel()
	for _, f := range finishers {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := migrated.Pool(t)
			j, _ := claimOne(t, pool)
			recheck := now.Add(time.Second)
			_, err := queries.RecheckServer(ctx, pool, j.Slug, &recheck)
			require.NoError(t, err)

			r := f.finish(t, pool, finishParams(j, now.Add(2*time.Second)))
			require.False(t, r.Advanced, "the compare-and-set must miss")
			require.True(t, r.JobFinished)
			s, err := queries.GetServerBySlug(ctx, pool, j.Slug)
			require.NoError(t, err)
			require.Equal(t, recheck, s.NextCheckAt.UTC(), "the re-check's next check time stands")
		})
	}
}

func TestAFinishOfAJobClosedAsAbandonedKeepsTheRunAndSaysSo(t *testing.T) {
	t.Parallel()
	for _, f := range finishers {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := migrated.Pool(t)
			j, round := claimOne(t, pool)
			// A later round's start, past the in-flight window, closes the job as abandoned.
			later := now.Add(16 * time.Minute)
			_, err := queries.CloseAbandoned(ctx, pool, 0, &later)
			require.NoError(t, err)
			// The job's lease ended with the window, so the claim takes the server again.
			again, err := queries.Claim(ctx, pool, queries.ClaimParams{Limit: 1, MinSpacing: 10 * time.Minute, Now: &later, RoundID: round})
			require.NoError(t, err)
			require.Len(t, again, 1, "the server is due again when its abandoned job's lease ends")

			r := f.finish(t, pool, finishParams(j, later.Add(time.Second)))
			require.False(t, r.JobFinished, "the open-job guard must miss")
			require.NotZero(t, r.RunID, "the observation is kept")
			jobs, err := queries.ListRoundJobs(ctx, pool, round)
			require.NoError(t, err)
			require.Equal(t, "abandoned", *jobs[0].Outcome)

			// The finish is late: it lost its lease, and the server (claimed again by the later
			// claim) is not moved on by it; the run says it is late, probectl's fault.
			require.False(t, r.Advanced, "a late finish must never advance the server")
			var next time.Time
			var late bool
			require.NoError(t, pool.QueryRow(ctx, `SELECT s.next_check_at, r.late FROM servers AS s
				JOIN probe_runs AS r ON r.server_id = s.id WHERE r.id = $1`, r.RunID).Scan(&next, &late))
			require.True(t, next.Equal(again[0].ClaimedNextCheckAt), "next_check_at moved to %s", next)
			require.True(t, late, "the run must be marked late")
		})
	}
}

func TestAReplayedFinishStoresNothingTwiceAndIsNoError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	j, _ := claimOne(t, pool)
	at := now.Add(3 * time.Second)
	first, err := queries.FinishTx(ctx, pool, finishParams(j, at))
	require.NoError(t, err)
	require.True(t, first.JobFinished)

	again, err := queries.FinishTx(ctx, pool, finishParams(j, at.Add(time.Minute)))
	require.NoError(t, err, "a replayed finish must be a no-op, not an error")
	require.Equal(t, first.RunID, again.RunID, "the replay names the run already stored")
	require.False(t, again.Advanced)
	require.False(t, again.JobFinished)
	var runs int
	var next time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM probe_runs WHERE job_id = $1),
		(SELECT next_check_at FROM servers WHERE id = $2)`, j.JobID, j.ServerID).Scan(&runs, &next))
	require.Equal(t, 1, runs)
	require.True(t, next.Equal(at.Add(12*time.Hour)), "the replay moved the server again: %s", next)
}

// A finish that names one job and another server (a spooled line another user wrote, a job id a
// failover gave to another claim, or a bug) advances nothing: neither the other server, though its
// next check time is the one named, nor the job's own server. The advance asks the job's server
// itself, and the finish refuses a claim the database does not hold as named (ErrClaimGone), so
// that a replay restores the result instead of storing it on another server's job.
func TestAFinishWhoseServerIsNotTheJobsAdvancesNothing(t *testing.T) {
	t.Parallel()
	modes := []struct {
		name   string
		finish func(t *testing.T, db queries.DBTX, p queries.FinishParams)
	}{
		{"in one transaction", func(t *testing.T, db queries.DBTX, p queries.FinishParams) {
			_, err := queries.FinishTx(t.Context(), db, p)
			require.ErrorIs(t, err, queries.ErrClaimGone)
		}},
		{"advance first, then the job", func(t *testing.T, db queries.DBTX, p queries.FinishParams) {
			advanced, err := queries.AdvanceServer(t.Context(), db, p.JobID, p.ServerID, p.ClaimedNextCheckAt, p.Now)
			require.NoError(t, err)
			require.False(t, advanced, "a job never advances another server")
			_, err = queries.FinishJob(t.Context(), db, p)
			require.ErrorIs(t, err, queries.ErrClaimGone)
		}},
		{"in a batch", func(t *testing.T, db queries.DBTX, p queries.FinishParams) {
			_, err := finishInBatch(t, db, p)
			require.ErrorIs(t, err, queries.ErrClaimGone)
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := migrated.Pool(t)
			j, _ := claimOne(t, pool)
			otherAt := now.Add(time.Hour) // not due: the claim left it alone
			other := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &otherAt})
			own, err := queries.GetServerBySlug(ctx, pool, j.Slug)
			require.NoError(t, err)

			p := finishParams(j, now.Add(3*time.Second))
			p.ServerID, p.ClaimedNextCheckAt = other, otherAt
			m.finish(t, pool, p)

			var next time.Time
			require.NoError(t, pool.QueryRow(ctx, "SELECT next_check_at FROM servers WHERE id = $1", other).Scan(&next))
			require.Equal(t, otherAt, next.UTC(), "the other server was not advanced")
			after, err := queries.GetServerBySlug(ctx, pool, j.Slug)
			require.NoError(t, err)
			require.Equal(t, own.NextCheckAt, after.NextCheckAt, "the job's own server was not advanced either")
		})
	}
}
