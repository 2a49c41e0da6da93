package status_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("status_tmpl", testfactory.Migrate)

func TestReadOfAnEmptyDatabaseHasNothingButTheTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := status.Read(ctx, migrated.Pool(t), &statustest.Now)
	require.NoError(t, err)

	require.Equal(t, statustest.Now, r.GeneratedAt)
	require.Nil(t, r.ActiveRelease)
	require.Equal(t, status.Due{}, r.Due)
	require.Empty(t, r.OpenJobs)
	require.Zero(t, r.OpenCount)
	require.Empty(t, r.RecentRounds)
	require.Zero(t, r.Duplicates.Pairs())

	// Absent lists are empty arrays and absent objects null, never missing keys.
	var shape map[string]any
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &shape))
	require.Nil(t, shape["active_release"])
	require.Equal(t, []any{}, shape["open_jobs"])
	require.Equal(t, []any{}, shape["recent_rounds"])
	require.Equal(t, []any{}, shape["duplicates_24h"].(map[string]any)["pairs"])
	require.Nil(t, shape["due_servers"].(map[string]any)["oldest"])
}

func TestReadWithoutATimeUsesTheDatabaseClock(t *testing.T) {
	t.Parallel()
	before := time.Now().Add(-time.Minute)
	r, err := status.Read(context.Background(), migrated.Pool(t), nil)
	require.NoError(t, err)
	require.WithinRange(t, r.GeneratedAt, before, time.Now().Add(time.Minute))
	require.Equal(t, time.UTC, r.GeneratedAt.Location())
}

func TestReadShowsEverySectionOfTheScenario(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	sc := statustest.Seed(ctx, t, pool)

	r, err := status.Read(ctx, pool, &statustest.Now)
	require.NoError(t, err)

	require.NotNil(t, r.ActiveRelease)
	require.Equal(t, "v1.4.0", r.ActiveRelease.Version)
	require.Equal(t, [3]int{19, 5, 3}, [3]int{r.ActiveRelease.Fanout, r.ActiveRelease.ClaimLimit, r.ActiveRelease.Concurrency})
	require.Equal(t, statustest.Now.Add(-2*time.Hour), r.ActiveRelease.DeployedAt)

	t.Run("due servers count the held one and name the oldest", func(t *testing.T) {
		require.Equal(t, 3, r.Due.Count)
		require.Equal(t, 1, r.Due.Held, "only the in-flight job holds its due server; the stale one no longer does")
		require.NotNil(t, r.Due.Oldest)
		require.Equal(t, statustest.DueLongest, r.Due.Oldest.Slug)
		require.Equal(t, 3*time.Hour, r.Due.Oldest.Overdue)
	})

	t.Run("open jobs are listed oldest first with their age, the stale one flagged", func(t *testing.T) {
		require.Equal(t, 3, r.OpenCount)
		require.Equal(t, 1, r.StaleCount)
		require.Len(t, r.OpenJobs, 3)
		type row struct {
			Job      int64
			Slug     string
			Age      time.Duration
			Stale    bool
			Advanced bool
		}
		var got []row
		for _, j := range r.OpenJobs {
			got = append(got, row{j.JobID, j.Slug, j.Age, j.Stale, j.Advanced})
		}
		require.Equal(t, []row{
			{sc.StaleJob, statustest.Stale, 40 * time.Minute, true, false},
			{sc.BetweenWritesJob, statustest.BetweenWrites, statustest.BetweenWritesAge, false, true},
			{sc.InFlightJob, statustest.InFlight, 3 * time.Minute, false, false},
		}, got)
		require.Equal(t, sc.RunningRound, *r.OpenJobs[1].RoundID)
		require.Equal(t, int32(3), *r.OpenJobs[1].Invocation)
	})

	t.Run("recent rounds are newest first with what they left", func(t *testing.T) {
		require.EqualValues(t, 3, r.RoundsTotal)
		require.Len(t, r.RecentRounds, 3)
		running, finished, stale := r.RecentRounds[0], r.RecentRounds[1], r.RecentRounds[2]
		require.Equal(t, sc.RunningRound, running.ID)
		require.Nil(t, running.FinishedAt)
		require.Nil(t, running.Duration())
		require.Equal(t, 2, running.OpenJobs)

		require.Equal(t, sc.FinishedRound, finished.ID)
		require.Equal(t, 43*time.Second, *finished.Duration())
		require.Equal(t, [5]int{4, 4, 3, 1, 0}, [5]int{finished.Jobs, finished.Runs, finished.Servers, finished.Failures, finished.OpenJobs})

		require.Equal(t, sc.StaleRound, stale.ID)
		require.Equal(t, [3]int{1, 0, 1}, [3]int{stale.Jobs, stale.Runs, stale.OpenJobs})
	})

	t.Run("the duplicate claim of the last 24 h comes from the audit", func(t *testing.T) {
		require.Equal(t, 1, r.Duplicates.Pairs())
		require.Equal(t, 1, r.Duplicates.Unexplained())
		p := r.Duplicates.Report.Pairs[0]
		require.Equal(t, statustest.Duplicate, p.Slug)
		require.Equal(t, audit.ClassAfterFinish, p.Class)
		require.Equal(t, 168*time.Millisecond, *p.GapAfterFinish)
		require.Equal(t, statustest.Now.Add(-24*time.Hour), r.Duplicates.Since)
		require.Equal(t, 10*time.Minute, r.Duplicates.Window)
	})
}

func TestAJobIsStaleFromTheMomentTheInFlightWindowEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	server := testfactory.Server(ctx, t, pool, nil)
	requested := statustest.Now.Add(-time.Hour)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &requested})

	// The claim closes a job as abandoned when requested_at <= now - window: the report must call
	// it stale at the same instant, not a moment later.
	cases := []struct {
		name  string
		now   time.Time
		stale bool
	}{
		{"a millisecond before the window ends it is only open", requested.Add(status.InFlight - time.Millisecond), false},
		{"when the window ends it is stale", requested.Add(status.InFlight), true},
	}
	for _, c := range cases {
		r, err := status.Read(ctx, pool, &c.now)
		require.NoError(t, err, c.name)
		require.Len(t, r.OpenJobs, 1, c.name)
		require.Equal(t, c.stale, r.OpenJobs[0].Stale, c.name)
		wantStale := 0
		if c.stale {
			wantStale = 1
		}
		require.Equal(t, wantStale, r.StaleCount, c.name+" (count)")
	}
}

func TestReportJSONMatchesTheDocumentedShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	statustest.Seed(ctx, t, pool)
	r, err := status.Read(ctx, pool, &statustest.Now)
	require.NoError(t, err)
	got, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')

	golden.Require(t, "testdata/report.json", got)
}

func TestReadListsTheOldestOpenJobsButCountsThemAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	// One open job more than the report lists: the oldest stale, the others a second apart.
	n := status.MaxOpenJobs + 1
	jobs := make([]int64, n)
	for i := range n {
		requested := statustest.Now.Add(-time.Duration(n-i) * time.Second)
		if i == 0 {
			requested = statustest.Now.Add(-status.InFlight)
		}
		server := testfactory.Server(ctx, t, pool, nil)
		jobs[i] = testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &requested})
	}

	r, err := status.Read(ctx, pool, &statustest.Now)
	require.NoError(t, err)
	require.Equal(t, n, r.OpenCount, "the count is complete")
	require.Equal(t, 1, r.StaleCount)
	require.Len(t, r.OpenJobs, status.MaxOpenJobs, "the list is bounded")
	require.Equal(t, jobs[0], r.OpenJobs[0].JobID, "oldest first")
	require.True(t, r.OpenJobs[0].Stale)
	require.Equal(t, jobs[n-2], r.OpenJobs[status.MaxOpenJobs-1].JobID, "the newest is the one left out")
}
