package history_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// One table of cases holds the three readers of due-ness to one rule (probe_claim_state,
// migrations/00021_claim_due.sql): the claim takes a server exactly when the dry run says it is
// claimable and `servers show` says it is due, and all three give the same state and the same
// time it becomes claimable. A job abandoned past the window is claimed once a round's start has
// closed it (CloseAbandoned), as the dry run and servers show say.
func TestTheClaimTheDryRunAndServersShowDecideEachServerAlike(t *testing.T) {
	t.Parallel()
	type job struct {
		requested time.Duration // before at
		finished  *time.Duration
	}
	fin := func(d time.Duration) *time.Duration { return &d }
	ago := func(d time.Duration) *time.Time { return testfactory.Ptr(at.Add(-d)) }
	const spacing = 10 * time.Minute // a round's default spacing guard, which servers show judges by without a release
	cases := []struct {
		name   string
		server testfactory.ServerOpts
		jobs   []job
		// spacingOff: the active release turns the spacing guard off (0).
		spacingOff bool
		// state is probe_claim_state's; servers show calls claimable "due".
		state      string
		reason     string        // the claimed job's, when claimed
		at         time.Duration // claimable_at - at (servers show: the due time, for a due server)
		claimedNow bool          // taken by a claim without a sweep first
	}{
		{name: "never checked and due: claimed as scheduled",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Minute)}, state: "claimable", reason: "scheduled", claimedNow: true},
		{name: "not due yet: scheduled by its plan interval",
			server: testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(at.Add(7 * time.Minute))}, state: "scheduled", at: 7 * time.Minute},
		{name: "checked an hour ago and due by its plan interval",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Minute)},
			jobs:   []job{{requested: time.Hour, finished: fin(59 * time.Minute)}}, state: "claimable", reason: "scheduled", claimedNow: true},
		{name: "paused, even when due", server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour), Status: "paused"}, state: "paused"},
		{name: "delisted, even when due", server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour), Status: "delisted"}, state: "delisted"},
		{name: "an open job holds it until its window ends",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour)}, jobs: []job{{requested: 14 * time.Minute}},
			state: "open_job", at: time.Minute},
		{name: "a leased server (in flight) is not due until its lease ends",
			server: testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(at.Add(11 * time.Minute))}, jobs: []job{{requested: 4 * time.Minute}},
			state: "open_job", at: 11 * time.Minute},
		{name: "a job open past the window is abandoned: claimed after a round's start closes it",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Minute)}, jobs: []job{{requested: 16 * time.Minute}},
			state: "abandoned", reason: "scheduled"},
		{name: "checked recently, within the spacing guard",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Hour)},
			jobs:   []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}}, state: "spacing", at: 6 * time.Minute},
		{name: "checked recently, the spacing guard off",
			server:     testfactory.ServerOpts{NextCheckAt: ago(time.Hour)},
			jobs:       []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}},
			spacingOff: true, state: "claimable", reason: "scheduled", claimedNow: true},
		{name: "a maintainer's re-check after the last job passes the spacing guard",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Second), MaintainerClaimedAt: ago(time.Second)},
			jobs:   []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}},
			state:  "claimable", reason: "maintainer_claim", claimedNow: true},
		{name: "a maintainer's re-check already answered by a job is an ordinary schedule",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Second), MaintainerClaimedAt: ago(5 * time.Minute)},
			jobs:   []job{{requested: 4 * time.Minute, finished: fin(3 * time.Minute)}}, state: "spacing", at: 6 * time.Minute},
		{name: "a maintainer's re-check does not pass the open-job guard",
			server: testfactory.ServerOpts{NextCheckAt: ago(time.Second), MaintainerClaimedAt: ago(time.Second)},
			jobs:   []job{{requested: 4 * time.Minute}}, state: "open_job", at: 11 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := dbtest.Pool(t, migrated.NewDB(t))
			sp := spacing
			if tc.spacingOff {
				sp = 0
				_, err := db.Exec(ctx, `INSERT INTO releases (version, fanout, claim_limit, concurrency, min_spacing, finish_mode,
				    deployed_by, active) VALUES ('test', 0, 5, 3, '0', 'tx', 'test', true)`)
				require.NoError(t, err)
			}
			opts := tc.server
			opts.Slug = "due"
			id := testfactory.Server(ctx, t, db, &opts)
			for _, j := range tc.jobs {
				opts := &testfactory.JobOpts{ServerID: id, RequestedAt: ago(j.requested)}
				if j.finished != nil {
					opts.FinishedAt = ago(*j.finished)
				}
				testfactory.Job(ctx, t, db, opts)
			}
			var want *time.Time
			if tc.state != "paused" && tc.state != "delisted" {
				want = testfactory.Ptr(at.Add(tc.at))
			}

			// servers show
			v, err := history.ShowServer(ctx, db, "due", testfactory.Ptr(at))
			require.NoError(t, err)
			showState, showAt := tc.state, want
			if tc.state == "claimable" {
				showState, showAt = "due", tc.server.NextCheckAt
			}
			require.Equal(t, showState, v.Next.State, "servers show: %s", v.Next.Why)
			requireSameTime(t, showAt, v.Next.At, "servers show's next check")

			// the dry run: the servers whose next check time has passed
			preview, err := queries.ClaimPreview(ctx, db, sp, 0, testfactory.Ptr(at))
			require.NoError(t, err)
			if !tc.server.NextCheckAt.After(at) {
				require.Len(t, preview, 1)
				require.Equal(t, tc.state, preview[0].State, "the dry run")
				requireSameTime(t, want, preview[0].ClaimableAt, "the dry run's claimable_at")
			} else {
				require.Empty(t, preview, "the dry run lists due servers only")
			}

			// the claim, without and then after a round's sweep
			round := testfactory.Round(ctx, t, db, nil)
			claim := func() []queries.ClaimedJob {
				jobs, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: 5, MinSpacing: sp, Now: testfactory.Ptr(at)})
				require.NoError(t, err)
				return jobs
			}
			jobs := claim()
			if !tc.claimedNow {
				require.Empty(t, jobs, "the claim takes only a claimable server")
				_, err := queries.CloseAbandoned(ctx, db, 0, testfactory.Ptr(at))
				require.NoError(t, err)
				jobs = claim()
			}
			if tc.reason == "" {
				require.Empty(t, jobs, "not claimable, even after a round's sweep")
				return
			}
			require.Len(t, jobs, 1)
			require.Equal(t, id, jobs[0].ServerID)
			require.Equal(t, tc.reason, jobs[0].Reason)
			require.Equal(t, at.Add(queries.InFlightWindow), jobs[0].ClaimedNextCheckAt.UTC(), "the claim leases the server until its job's window ends")
		})
	}
}

func requireSameTime(t *testing.T, want, got *time.Time, what string) {
	t.Helper()
	if want == nil {
		require.Nil(t, got, what)
		return
	}
	require.NotNil(t, got, what)
	require.Equal(t, want.UTC(), got.UTC(), what)
}
