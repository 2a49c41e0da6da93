package release_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// A round whose prober died is not something to wait for: verify fails, naming the round and the
// jobs it left open, where it used to answer "wait for the rest" forever. A round of a binary
// from before heartbeats (NULL) is judged by its start.
func TestVerifyFailsADeadRoundNamingItsOpenJobs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		heartbeat func(start time.Time) *time.Time
		verdict   string
	}{
		{"its heartbeat stopped two minutes ago", func(time.Time) *time.Time {
			return testfactory.Ptr(time.Now().Add(-2 * time.Minute))
		}, release.VerdictFail},
		{"it beat a moment ago", func(time.Time) *time.Time { return testfactory.Ptr(time.Now()) }, release.VerdictInconclusive},
		{"a previous binary's round, started long ago, never beat", func(time.Time) *time.Time { return nil }, release.VerdictFail},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, 2)
			s.round(time.Minute, true, job{server: 0})
			second := s.round(6*time.Minute, false, job{server: 1, open: true})
			_, err := s.pool.Exec(s.ctx, "UPDATE probe_rounds SET heartbeat_at = $2 WHERE id = $1", second,
				tc.heartbeat(s.live.Add(6*time.Minute)))
			require.NoError(t, err)

			rep := s.verify(release.VerifyRequest{})

			require.Equal(t, tc.verdict, rep.Verdict, "%+v", rep.Checks)
			require.Equal(t, tc.verdict, statuses(rep)[release.CheckRounds])
			if tc.verdict != release.VerdictFail {
				require.Equal(t, queries.RoundRunning, rep.Rounds[1].State)
				return
			}
			require.Equal(t, queries.RoundDead, rep.Rounds[1].State)
			for _, c := range rep.Checks {
				if c.Name == release.CheckRounds {
					require.Len(t, c.Items, 1)
					require.Contains(t, c.Items[0], "round "+strconv.FormatInt(second, 10)+" is dead")
					require.Contains(t, c.Items[0], "(srv-1)")
					require.Contains(t, c.Items[0], "(no heartbeat for 1m)", "the duration as tables write it")
				}
			}
		})
	}
}
