package history_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// A server's runs are read through the partitions of their days only, widening back by key until
// the answer cannot change (ServerRuns): whatever the limit, the answer is the one a read of every
// partition gives (queries.ListRuns), with runs years back, runs in the default partition (a
// previous binary's advance-first finish stores no key) and runs of the same second.
func TestAServersRunsReadByKeyAreTheRunsReadFromEveryPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	now := time.Now().UTC()
	_, err := queries.EnsurePartitions(ctx, pool, now.Add(-40*24*time.Hour), now, false)
	require.NoError(t, err)
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "spread"})
	other := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "other"})
	var ids []int64
	storeLate := func(s int64, ago, late time.Duration) int64 {
		started := now.Add(-ago)
		requested := started.Add(-late)
		fin := started.Add(time.Second)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: s, RequestedAt: &requested, FinishedAt: &fin, Outcome: "ok"})
		return testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: s, StartedAt: &started, FinishedAt: &fin,
			Result: []byte(`{"outcome":"ok"}`)})
	}
	store := func(s int64, ago time.Duration) int64 { return storeLate(s, ago, 0) }
	// every 6 hours for 3 days, daily for 36 days, then every 50 days back 3 years (the default partition)
	for h := 1; h <= 72; h += 6 {
		ids = append(ids, store(server, time.Duration(h)*time.Hour))
	}
	for d := 4; d <= 40; d++ {
		ids = append(ids, store(server, time.Duration(d)*24*time.Hour))
		store(other, time.Duration(d)*24*time.Hour)
	}
	for d := 90; d <= 3*365; d += 50 {
		ids = append(ids, store(server, time.Duration(d)*24*time.Hour))
	}
	// two runs of the same second, one whose check started 20 hours after its job was requested
	// (keyed before the first window, started within it), and one a previous binary stored without
	// its key
	ids = append(ids, store(server, 50*time.Hour), store(server, 50*time.Hour), store(server, 47*time.Hour),
		storeLate(server, 45*time.Hour, 20*time.Hour))
	_, err = pool.Exec(ctx, "UPDATE probe_runs SET job_requested_at = NULL WHERE id = $1", ids[3])
	require.NoError(t, err)

	for _, limit := range []int{1, 5, 8, 9, 10, 12, 13, 20, 40, 49, 50, 60, 200} {
		want, err := queries.ListRuns(ctx, pool, queries.RunFilter{Server: "spread", Limit: limit})
		require.NoError(t, err)
		got, err := history.ListRuns(ctx, pool, queries.RunFilter{Server: "spread", Limit: limit})
		require.NoError(t, err)
		require.Equal(t, want, got, "limit %d", limit)
	}
	since := now.Add(-10 * 24 * time.Hour)
	want, err := queries.ListRuns(ctx, pool, queries.RunFilter{Server: "spread", Since: &since, Limit: 100})
	require.NoError(t, err)
	got, err := history.ListRuns(ctx, pool, queries.RunFilter{Server: "spread", Since: &since, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NotEmpty(t, got)
}
