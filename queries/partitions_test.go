package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// partitionOf names the partition a job (or a run, with table probe_runs) is stored in.
func partitionOf(t *testing.T, db queries.DBTX, table string, id int64) string {
	t.Helper()
	var name string
	require.NoError(t, db.QueryRow(context.Background(),
		"SELECT tableoid::regclass::text FROM "+table+" WHERE id = $1", id).Scan(&name))
	return name
}

func TestAClaimAndItsFinishAreStoredInTheDaysPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	now := time.Now().UTC()
	past := now.Add(-time.Hour)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &past})
	round := testfactory.Round(ctx, t, pool, nil)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	j := jobs[0]
	day := "p" + j.RequestedAt.UTC().Format("20060102")
	require.Equal(t, "probe_jobs_"+day, partitionOf(t, pool, "probe_jobs", j.JobID))
	r := finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, nil)
	require.True(t, r.JobFinished)
	require.Equal(t, "probe_runs_"+day, partitionOf(t, pool, "probe_runs", r.RunID))
	// A replay stores nothing twice.
	again := finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, nil)
	require.Equal(t, r.RunID, again.RunID)
	require.False(t, again.JobFinished)
}

func TestAFinishInADayWithoutAPartitionIsKeptAndMaintenanceMovesIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	// 40 days ahead: no partition was made that far. At noon of that day, so that the hour the
	// maintenance below covers, and the jobs half an hour before it, are that day's whatever the
	// time the test runs (from 23:00 UTC the hour reached into the next day: four partitions made).
	at := time.Now().UTC().Add(40 * 24 * time.Hour).Truncate(24 * time.Hour).Add(12 * time.Hour)
	due := at.Add(-time.Minute)
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: &due})
	round := testfactory.Round(ctx, t, pool, nil)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5, Now: &at})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	open := jobs[0]
	require.Equal(t, "probe_jobs_default", partitionOf(t, pool, "probe_jobs", open.JobID))

	// A second, finished job of the server the same day: its run lands in the default partition.
	at2 := at.Add(-30 * time.Minute)
	fin := at2.Add(time.Second)
	done := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &at2, FinishedAt: &fin, Outcome: "ok"})
	run := testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: done, ServerID: server, StartedAt: &at2, FinishedAt: &fin,
		Result: []byte(`{"outcome":"ok"}`)})
	require.Equal(t, "probe_runs_default", partitionOf(t, pool, "probe_runs", run))

	dry, err := queries.EnsurePartitions(ctx, pool, at, at.Add(time.Hour), true)
	require.NoError(t, err)
	require.Len(t, dry, 2)
	require.Equal(t, "probe_jobs_default", partitionOf(t, pool, "probe_jobs", open.JobID), "a dry run moves nothing")

	made, err := queries.EnsurePartitions(ctx, pool, at, at.Add(time.Hour), false)
	require.NoError(t, err)
	require.Len(t, made, 2)
	require.EqualValues(t, 2, made[0].MovedRows)
	require.EqualValues(t, 1, made[1].MovedRows)
	day := "p" + at.Format("20060102")
	require.Equal(t, "probe_jobs_"+day, partitionOf(t, pool, "probe_jobs", open.JobID))
	require.Equal(t, "probe_runs_"+day, partitionOf(t, pool, "probe_runs", run))

	// The moved open job still holds its server (layer 4), and its finish lands in the new partition.
	var openRows int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_open_jobs WHERE job_id = $1", open.JobID).Scan(&openRows))
	require.Equal(t, 1, openRows)
	r := finishAt(t, pool, open.JobID, open.ServerID, open.ClaimedNextCheckAt, &at)
	require.True(t, r.JobFinished)
	require.Equal(t, "probe_runs_"+day, partitionOf(t, pool, "probe_runs", r.RunID))

	// Moving rows counted nothing twice: the day's rollup has the two runs once.
	var counted int
	require.NoError(t, pool.QueryRow(ctx, "SELECT sum(counted) FROM server_run_days WHERE server_id = $1", server).Scan(&counted))
	require.Equal(t, 2, counted)

	again, err := queries.EnsurePartitions(ctx, pool, at, at.Add(time.Hour), false)
	require.NoError(t, err)
	require.Empty(t, again, "maintenance is idempotent")
}

func TestASecondOpenJobForAServerIsRefusedWhoeverWritesIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	server := testfactory.Server(ctx, t, pool, nil)
	now := time.Now().UTC()
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &now})
	// The next day: another partition, where a partial unique index on probe_jobs could not see
	// the first job.
	tomorrow := now.Add(24 * time.Hour)
	_, err := pool.Exec(ctx, "INSERT INTO probe_jobs (server_id, requested_at) VALUES ($1, $2)", server, tomorrow)
	require.ErrorContains(t, err, "probe_jobs_one_open_per_server")
}

func TestAWeeklySettingMakesWeekPartitionsAfterTheDailyOnes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	// The daily partitions the migration made, from the day the template was migrated (which is
	// not today when the tests run across midnight UTC), read before any week is made.
	var firstDay, lastDay time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(range_from), max(range_to) FROM probe_partitions
	    WHERE parent = 'probe_jobs' AND dropped_at IS NULL AND isfinite(range_from)
	      AND range_to = range_from + interval '24 hours'`).Scan(&firstDay, &lastDay))
	require.True(t, lastDay.After(firstDay), "the daily partitions the migration made: [%s, %s)", firstDay, lastDay)
	_, err := queries.SetRetention(ctx, pool, nil, "week", "tester")
	require.NoError(t, err)
	// 60 days ahead: past the daily partitions the migration made.
	from := time.Now().UTC().Add(60 * 24 * time.Hour)
	made, err := queries.EnsurePartitions(ctx, pool, from, from.Add(10*24*time.Hour), false)
	require.NoError(t, err)
	require.NotEmpty(t, made)
	for _, p := range made {
		require.Equal(t, time.Monday, p.RangeFrom.UTC().Weekday(), "%s", p.Table)
		require.Equal(t, 7*24*time.Hour, p.RangeTo.Sub(p.RangeFrom), "%s", p.Table)
	}
	// Days already made stay as they are: a week is clipped to what they leave (the days before
	// them this week, and from their end), never overlapping them (ATTACH would refuse).
	now := time.Now().UTC()
	made, err = queries.EnsurePartitions(ctx, pool, now.Add(-7*24*time.Hour), now.Add(14*24*time.Hour), false)
	require.NoError(t, err)
	for _, p := range made {
		require.True(t, !p.RangeTo.After(firstDay) || !p.RangeFrom.Before(lastDay),
			"%s [%s, %s) overlaps the daily partitions", p.Table, p.RangeFrom, p.RangeTo)
	}
}
