package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/testfactory"
)

// status calls a dead round recovered by the alerts' rule (alert_round_recovered): every job it
// claimed has its run. A dead round whose job was closed as abandoned without a run has no job
// open, but its check is lost and its round.dead stands: status says it is dead, and how many
// checks it lost. One whose abandoned job got its run late (runs recover) is recovered.
func TestStatusCallsADeadRoundWhoseJobWasAbandonedWithoutARunDeadNotRecovered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedDB(t)
	now := statustest.Now
	plant := func(slug string, startedAgo time.Duration, withRun, finished bool) int64 {
		start, beat := now.Add(-startedAgo), now.Add(-startedAgo+time.Minute)
		srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug, URL: "https://" + slug + ".example/mcp", Kind: "mcp"})
		ro := &testfactory.RoundOpts{Version: "v1", StartedAt: &start, HeartbeatAt: &beat}
		if finished {
			// Ended later, by an invocation a worker's queue retried once the dead one's was
			// rescued: its lost check stays said.
			end := start.Add(16 * time.Minute)
			ro.FinishedAt = &end
		}
		round := testfactory.Round(ctx, t, pool, ro)
		done := start.Add(time.Hour)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round, RequestedAt: &start,
			FinishedAt: &done, Outcome: "abandoned"})
		if withRun {
			testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: srv, StartedAt: &start, FinishedAt: &start})
		}
		return round
	}
	ended := plant("ended", 4*time.Hour, false, true)
	lost := plant("lost", 3*time.Hour, false, false)
	late := plant("late", 2*time.Hour, true, false)

	out, _, err := statusAt(t, url, "-o", "json")
	require.NoError(t, err)
	var rep struct {
		RecentRounds []struct {
			RoundID   int64  `json:"round_id"`
			State     string `json:"state"`
			Abandoned int    `json:"abandoned"`
			OpenJobs  int    `json:"open_jobs"`
		} `json:"recent_rounds"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.RecentRounds, 3)
	require.Equal(t, ended, rep.RecentRounds[2].RoundID)
	require.Equal(t, "finished", rep.RecentRounds[2].State)
	require.Equal(t, late, rep.RecentRounds[0].RoundID)
	require.Equal(t, "recovered", rep.RecentRounds[0].State, "its abandoned job has its run")
	require.Equal(t, lost, rep.RecentRounds[1].RoundID)
	require.Equal(t, "dead", rep.RecentRounds[1].State, "no job open, but its one job has no run")
	require.Equal(t, [2]int{1, 0}, [2]int{rep.RecentRounds[1].Abandoned, rep.RecentRounds[1].OpenJobs})

	table, _, err := statusAt(t, url)
	require.NoError(t, err)
	require.Contains(t, table, "dead, 1 check lost")
	require.Contains(t, table, "recovered")
	require.Contains(t, table, "16m, 1 check lost", "finished, and its lost check said")
}
