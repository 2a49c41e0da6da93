package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestRateListsOnlyTheServersOverThePromise(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	since, until := t0, t0.Add(24*time.Hour)
	run := func(server, job int64, requests int) {
		testfactory.Run(f.ctx, t, f.pool, &testfactory.RunOpts{JobID: job, ServerID: server, Requests: requests})
	}

	kept := f.server("kept") // two rounds 12 h apart on the standard plan
	run(kept, f.finished(kept, t0.Add(time.Hour), time.Second, ""), 2)
	run(kept, f.finished(kept, t0.Add(13*time.Hour), time.Second, ""), 2)

	twice := f.server("twice") // the incident: a second round seconds after the first
	run(twice, f.finished(twice, t0.Add(time.Hour), time.Second, ""), 2)
	run(twice, f.finished(twice, t0.Add(time.Hour+1168*time.Millisecond), time.Second, ""), 2)

	claimed := f.server("claimed") // a maintainer's re-check is theirs to ask for
	run(claimed, f.finished(claimed, t0.Add(time.Hour), time.Second, ""), 2)
	run(claimed, f.finished(claimed, t0.Add(2*time.Hour), time.Second, "maintainer_claim"), 2)

	frequent := testfactory.Server(f.ctx, t, f.pool, &testfactory.ServerOpts{Slug: "frequent", Plan: "frequent"})
	for i := range 4 { // every 15 minutes, as its plan says
		f.finished(frequent, t0.Add(time.Duration(i)*15*time.Minute), time.Second, "")
	}

	before := f.server("before") // its previous round lies before --since, 6 h earlier
	f.finished(before, since.Add(-6*time.Hour), time.Second, "")
	f.finished(before, since.Add(time.Hour), time.Second, "")

	r, err := audit.Rate(f.ctx, f.pool, audit.RateParams{Since: since, Until: until})
	require.NoError(t, err)

	require.Equal(t, int64(5), r.Servers)
	require.Equal(t, int64(2+2+2+4+1), r.Rounds)
	require.Equal(t, int64(12), r.Requests)
	require.Len(t, r.Over, 2)

	got := r.Over[0]
	require.Equal(t, "twice", got.Slug)
	require.Equal(t, int64(2), got.Rounds)
	require.Equal(t, int64(2), got.AllowedRounds)
	require.Equal(t, int64(16), got.AllowedRequests())
	require.Equal(t, int64(4), got.Requests)
	require.Equal(t, 2, got.MaxRequests)
	require.Equal(t, int64(1), got.ShortGaps)
	require.Equal(t, 1168*time.Millisecond, *got.ClosestGap)

	require.Equal(t, "before", r.Over[1].Slug, "a round 7 h after one before --since breaks a 12 h promise")
	require.Equal(t, 7*time.Hour, *r.Over[1].ClosestGap)
}

func TestOpenJobsAreAgedAndThoseBeyondTheInFlightWindowAreStale(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := t0.Add(time.Hour)
	round := testfactory.Round(f.ctx, t, f.pool, &testfactory.RoundOpts{Trigger: "cron", Version: "v1.4.0"})
	stale := testfactory.Job(f.ctx, t, f.pool, &testfactory.JobOpts{ServerID: f.server("stuck"),
		RoundID: &round, Invocation: testfactory.Ptr(3), RequestedAt: testfactory.Ptr(now.Add(-audit.InFlightWindow))})
	fresh := f.open(f.server("busy"), now.Add(-audit.InFlightWindow+time.Millisecond), "manual")
	f.finished(f.server("done"), now.Add(-time.Hour), time.Second, "")

	r, err := audit.Open(f.ctx, f.pool, audit.OpenParams{Now: now})
	require.NoError(t, err)

	require.Len(t, r.Jobs, 2)
	require.Equal(t, 1, r.Stale())
	old := r.Jobs[0]
	require.Equal(t, stale, old.JobID)
	require.Equal(t, "stuck", old.Slug)
	require.Equal(t, round, *old.RoundID)
	require.Equal(t, "v1.4.0", *old.RoundVersion)
	require.Equal(t, int32(3), *old.Invocation)
	require.Equal(t, audit.InFlightWindow, old.Age)
	require.True(t, old.Stale, "open for exactly the in-flight window is stale")

	young := r.Jobs[1]
	require.Equal(t, fresh, young.JobID)
	require.Nil(t, young.RoundID)
	require.False(t, young.Stale, "a millisecond younger is still in flight")
}
