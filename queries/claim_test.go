package queries_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// now is the fixed clock of the claim tests. The table that holds the claim, the dry run and
// servers show to one rule is internal/history/due_test.go.
var now = time.Date(2026, 10, 7, 20, 55, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time { return testfactory.Ptr(now.Add(-d)) }

func TestClaimDecidesEachServerAsThePreviewSays(t *testing.T) {
	t.Parallel()
	type job struct {
		requested time.Duration // before now
		finished  *time.Duration
	}
	fin := func(d time.Duration) *time.Duration { return &d }
	cases := []struct {
		name        string
		server      testfactory.ServerOpts
		jobs        []job
		spacing     time.Duration
		wantClaimed bool
		wantReason  string
		wantState   string        // in the preview; "" = not listed (not due)
		wantAt      time.Duration // claimable_at - now
	}{
		{name: "a due server with no jobs is claimed as scheduled",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Minute)}, spacing: 10 * time.Minute,
			wantClaimed: true, wantReason: "scheduled", wantState: "claimable"},
		{name: "a server not due yet is left alone",
			server: testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(now.Add(time.Minute))}, spacing: 10 * time.Minute},
		{name: "a paused server is skipped even when due",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour), Status: "paused"}, spacing: 10 * time.Minute,
			wantState: "paused"},
		{name: "a delisted server is skipped even when due",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour), Status: "delisted"}, spacing: 10 * time.Minute,
			wantState: "delisted"},
		{name: "a server with an open job is skipped until the job would be abandoned",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour)}, jobs: []job{{requested: 14 * time.Minute}},
			wantState: "open_job", wantAt: time.Minute},
		{name: "a job open past the in-flight window waits for a round's start to close it as abandoned",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour)}, jobs: []job{{requested: 16 * time.Minute}},
			spacing: 10 * time.Minute, wantState: "abandoned"},
		{name: "a server with a finished job within the spacing is skipped by the spacing guard",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour)},
			jobs:   []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}}, spacing: 10 * time.Minute,
			wantState: "spacing", wantAt: 6 * time.Minute},
		{name: "with the spacing guard off that server is claimed",
			server:      testfactory.ServerOpts{NextCheckAt: ago(time.Hour)},
			jobs:        []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}},
			wantClaimed: true, wantReason: "scheduled", wantState: "claimable"},
		{name: "a maintainer claim after the last job passes the spacing guard",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Second), MaintainerClaimedAt: ago(time.Second)},
			jobs:   []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}}, spacing: 10 * time.Minute,
			wantClaimed: true, wantReason: "maintainer_claim", wantState: "claimable"},
		{name: "a maintainer claim already answered by a job is an ordinary schedule",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Second), MaintainerClaimedAt: ago(5 * time.Minute)},
			jobs:   []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}}, spacing: 10 * time.Minute,
			wantState: "spacing", wantAt: 6 * time.Minute},
		{name: "a maintainer claim does not pass the open-job guard",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Second), MaintainerClaimedAt: ago(time.Second)},
			jobs:   []job{{requested: 4 * time.Minute}}, spacing: 10 * time.Minute,
			wantState: "open_job", wantAt: 11 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := migrated.Pool(t)
			id := testfactory.Server(ctx, t, pool, &tc.server)
			for _, j := range tc.jobs {
				opts := &testfactory.JobOpts{ServerID: id, RequestedAt: ago(j.requested)}
				if j.finished != nil {
					opts.FinishedAt = ago(*j.finished)
				}
				testfactory.Job(ctx, t, pool, opts)
			}

			preview, err := queries.ClaimPreview(ctx, pool, tc.spacing, 0, &now)
			require.NoError(t, err)
			if tc.wantState == "" {
				require.Empty(t, preview)
			} else {
				require.Len(t, preview, 1)
				require.Equal(t, tc.wantState, preview[0].State)
				if tc.wantState == "paused" || tc.wantState == "delisted" {
					require.Nil(t, preview[0].ClaimableAt)
				} else {
					require.NotNil(t, preview[0].ClaimableAt)
					require.Equal(t, now.Add(tc.wantAt), preview[0].ClaimableAt.UTC())
				}
			}

			round := testfactory.Round(ctx, t, pool, nil)
			jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Invocation: 3, Limit: 5,
				MinSpacing: tc.spacing, Now: &now})
			require.NoError(t, err)
			if !tc.wantClaimed {
				require.Empty(t, jobs)
				return
			}
			require.Len(t, jobs, 1)
			got := jobs[0]
			require.Equal(t, id, got.ServerID)
			require.Equal(t, tc.wantReason, got.Reason)
			require.Equal(t, tc.server.NextCheckAt.UTC(), got.DueAt.UTC())
			require.Equal(t, now.Add(queries.InFlightWindow), got.ClaimedNextCheckAt.UTC(), "the claim leases the server until its job's window ends")
			require.Equal(t, now, got.RequestedAt.UTC())
		})
	}
}

func TestClaimTakesTheMostOverdueFirstUpToItsLimit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	var ids []int64
	for i := range 4 {
		ids = append(ids, testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Duration(4-i) * time.Hour)}))
	}
	round := testfactory.Round(ctx, t, pool, nil)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 3, MinSpacing: 10 * time.Minute, Now: &now})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	for i, j := range jobs {
		require.Equal(t, ids[i], j.ServerID)
	}
	again, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 3, MinSpacing: 10 * time.Minute, Now: &now})
	require.NoError(t, err)
	require.Len(t, again, 1, "the three claimed have open jobs now")
	require.Equal(t, ids[3], again[0].ServerID)
}

func TestAClaimOfNothingWritesNothing(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	jobs, err := queries.Claim(t.Context(), pool, queries.ClaimParams{Limit: 0, Now: &now})
	require.NoError(t, err)
	require.Empty(t, jobs)
}

// A claim given the timeline its round began on claims on that timeline only: on another (the
// database failed over since), it claims nothing and opens no job, in its own statement, so that
// a claim sent again after a failover does not take the servers whose lost claims look due.
func TestAClaimOnAnotherTimelineThanItsRoundsClaimsNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
	round := testfactory.Round(ctx, t, pool, nil)
	tl, err := queries.CurrentTimeline(ctx, pool)
	require.NoError(t, err)
	other := tl + 1

	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5, Now: &now, Timeline: &other})
	require.NoError(t, err)
	require.Empty(t, jobs)
	var open int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_jobs WHERE server_id = $1", srv).Scan(&open))
	require.Zero(t, open, "no job opened")

	jobs, err = queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5, Now: &now, Timeline: &tl})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "on its round's timeline it claims")
	require.Equal(t, srv, jobs[0].ServerID)
}
