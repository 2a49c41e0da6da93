package release_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// afterPrevious makes the scene's release (#1) the previous one: its rounds so far are the
// baseline, and a release #2 goes live an hour later, which round() plants rounds of from then on.
func (s *scene) afterPrevious() {
	s.t.Helper()
	live := s.live.Add(time.Hour)
	rec, err := release.Record(s.ctx, s.pool, release.RecordRequest{Version: "v3", Settings: parallel,
		WaysBack: []release.Way{release.WayPrevious}, Actor: "bo", Now: &live})
	require.NoError(s.t, err)
	s.release, s.live = rec.Release, live
}

func jobs(outcomes ...string) []job {
	out := make([]job, len(outcomes))
	for i, o := range outcomes {
		out[i] = job{server: i, outcome: o}
	}
	return out
}

// The health check compares the ok share of the release's rounds with the release active before,
// over the servers both checked (each one's last check under that release), as post-deploy
// analysis does; a drop of more than --max-ok-drop points fails. Without a baseline it reports the
// share, says so, and neither fails nor holds the verdict.
func TestVerifyHealthComparesTheOkShareWithThePreviousRelease(t *testing.T) {
	t.Parallel()
	const f = "failed"
	cases := []struct {
		name      string
		baseline  []job // rounds of the previous release; nil: a first release
		now       []job
		maxDrop   *float64
		status    string
		detail    string
		drop      *float64
		itemCount int
	}{
		{name: "a round that failed 6 checks of 6 after a release that passed them all",
			baseline: jobs("ok", "ok", "ok", "ok", "ok", "ok"), now: jobs(f, f, f, f, f, f),
			status: release.VerdictFail, detail: "down 100.0 points, more than the 10.0 allowed", drop: testPtr(100.0), itemCount: 6},
		{name: "one check of six failed: 16.7 points down, more than 10",
			baseline: jobs("ok", "ok", "ok", "ok", "ok", "ok"), now: jobs("ok", f, "ok", "ok", "ok", "ok"),
			status: release.VerdictFail, detail: "down 16.7 points", drop: testPtr(16.7), itemCount: 1},
		{name: "the same drop under --max-ok-drop 20",
			baseline: jobs("ok", "ok", "ok", "ok", "ok", "ok"), now: jobs("ok", f, "ok", "ok", "ok", "ok"), maxDrop: testPtr(20.0),
			status: release.VerdictPass, detail: "down 16.7 points, within the 20.0 points allowed", drop: testPtr(16.7)},
		{name: "better than before",
			baseline: jobs(f, f, "ok", "ok", "ok", "ok"), now: jobs("ok", "ok", "ok", "ok", "ok", f),
			status: release.VerdictPass, detail: "up 16.7 points", drop: testPtr(-16.7)},
		{name: "a first release has no baseline, whatever its share",
			now:    jobs(f, f, f, f, f, f),
			status: release.VerdictPass, detail: "ok share 0.0% (0 of 6 jobs); no baseline: no release was active before this one"},
		{name: "no server in common with the previous release",
			baseline: []job{{server: 6}, {server: 7}}, now: jobs(f, f, f, f, f, f),
			status: release.VerdictPass, detail: "no baseline: release #1 checked none of these servers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, 8)
			if tc.baseline != nil {
				s.round(time.Minute, true, tc.baseline...)
				s.afterPrevious()
			}
			s.round(time.Minute, true, tc.now[:3]...)
			s.round(6*time.Minute, true, tc.now[3:]...)

			rep := s.verify(release.VerifyRequest{MaxOkDrop: tc.maxDrop})

			c := checkNamed(t, rep, release.CheckHealth)
			require.Equal(t, tc.status, c.Status, c.Detail)
			require.Contains(t, c.Detail, tc.detail)
			require.Len(t, c.Items, tc.itemCount, c.Items)
			require.Equal(t, tc.status, rep.Verdict, "the other checks pass: health decides the verdict")
			require.Equal(t, tc.drop, rep.Health.DropPoints)
			require.Equal(t, tc.drop != nil, rep.Health.BaselineAvailable)
			require.Equal(t, 6, rep.Health.Jobs)
		})
	}
}

// --max-ok-drop is a share's points: 0 to 100, else bad input naming the flag.
func TestVerifyRefusesAMaxOkDropOutsideZeroToHundred(t *testing.T) {
	t.Parallel()
	for _, v := range []float64{-1, 100.5} {
		err := release.ValidateVerify(release.VerifyRequest{MaxOkDrop: &v})
		require.Contains(t, asFlags(err), "--max-ok-drop")
	}
	for _, v := range []float64{0, 100} {
		require.NoError(t, release.ValidateVerify(release.VerifyRequest{MaxOkDrop: &v}))
	}
}

// A dead round whose jobs were all finished since (runs recover stored what its spool held) is
// recovered, not dead forever: verify reads it as a finished round and passes it.
func TestVerifyShowsADeadRoundWhoseJobsWereStoredSinceAsRecovered(t *testing.T) {
	t.Parallel()
	s := newScene(t, 4)
	s.round(time.Minute, true, job{server: 0}, job{server: 1})
	second := s.round(6*time.Minute, false, job{server: 2}, job{server: 3})
	_, err := s.pool.Exec(s.ctx, "UPDATE probe_rounds SET heartbeat_at = now() - interval '2 minutes' WHERE id = $1", second)
	require.NoError(t, err)

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, release.VerdictPass, rep.Verdict, "%+v", rep.Checks)
	require.Equal(t, queries.RoundRecovered, rep.Rounds[1].State)
	require.Equal(t, 2, rep.Rounds[1].Jobs)
	require.Contains(t, checkNamed(t, rep, release.CheckRounds).Detail, "died but every job it claimed was finished since (recovered)")
	require.Contains(t, checkNamed(t, rep, release.CheckJobsRunsServers).Detail, "in 2 finished round(s)")
}

func testPtr[T any](v T) *T { return &v }

// A dead round whose jobs were closed as abandoned without a run has no job open, but it is not
// recovered: the checks are lost, and the alerts (alert_round_recovered) keep its round.dead. Verify
// agrees with them: dead, failed, naming the lost job.
func TestVerifyShowsADeadRoundWhoseJobsWereAbandonedWithoutRunsAsDead(t *testing.T) {
	t.Parallel()
	s := newScene(t, 4)
	s.round(time.Minute, true, job{server: 0}, job{server: 1})
	second := s.round(6*time.Minute, false, job{server: 2}, job{server: 3, noRun: true, outcome: "abandoned"})
	_, err := s.pool.Exec(s.ctx, "UPDATE probe_rounds SET heartbeat_at = now() - interval '2 minutes' WHERE id = $1", second)
	require.NoError(t, err)
	var alertsRecovered bool
	require.NoError(t, s.pool.QueryRow(s.ctx, "SELECT alert_round_recovered($1)", second).Scan(&alertsRecovered))
	require.False(t, alertsRecovered)

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, release.VerdictFail, rep.Verdict, "%+v", rep.Checks)
	require.Equal(t, queries.RoundDead, rep.Rounds[1].State)
	require.Equal(t, 0, rep.Rounds[1].OpenJobs)
	rounds := checkNamed(t, rep, release.CheckRounds)
	require.Equal(t, release.VerdictFail, rounds.Status)
	require.NotContains(t, rounds.Detail, "recovered")
	require.Len(t, rounds.Items, 1)
	require.Contains(t, rounds.Items[0], "open jobs: none; 1 check(s) lost, abandoned without a run: job ")
	require.Contains(t, rounds.Items[0], "("+s.servers[3].slug+")")
}
