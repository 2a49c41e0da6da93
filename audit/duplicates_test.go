package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
)

func TestDuplicateWindowEdges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		window time.Duration
		gap    time.Duration
		pairs  int
	}{
		{"a second job exactly the window after the first is not a duplicate", 0, 10 * time.Minute, 0},
		{"a second job a microsecond under the window is a duplicate", 0, 10*time.Minute - time.Microsecond, 1},
		{"a second job a millisecond under the window is a duplicate", 0, 10*time.Minute - time.Millisecond, 1},
		{"a second job at the same instant is a duplicate", 0, 0, 1},
		{"a custom window's exact width is not a duplicate", 5 * time.Minute, 5 * time.Minute, 0},
		{"just under a custom window is a duplicate", 5 * time.Minute, 5*time.Minute - time.Microsecond, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			s := f.server("edge")
			first := f.finished(s, t0, 2*time.Second, "")
			second := f.finished(s, t0.Add(tc.gap), 2*time.Second, "")

			r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{
				Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour), Window: tc.window})
			require.NoError(t, err)

			require.Len(t, r.Pairs, tc.pairs)
			require.Equal(t, int64(2), r.Population.Jobs)
			require.NotNil(t, r.Closest, "two jobs of one server always make a closest pair")
			require.Equal(t, tc.gap, r.Closest.Gap, "gaps keep the microseconds PostgreSQL stores")
			if tc.pairs == 1 {
				p := r.Pairs[0]
				require.Equal(t, first, p.FirstJobID)
				require.Equal(t, second, p.SecondJobID)
				require.Equal(t, tc.gap, p.RequestGap)
			}
		})
	}
}

func TestTheJobBeforeSinceStillCountsAsThePreviousOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	since := t0
	near := f.server("near")
	before := f.finished(near, since.Add(-2*time.Minute), 2*time.Second, "")
	after := f.finished(near, since.Add(3*time.Minute), 2*time.Second, "")
	far := f.server("far")
	f.finished(far, since.Add(-30*time.Minute), 2*time.Second, "")
	f.finished(far, since.Add(time.Minute), 2*time.Second, "")

	r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{Since: since, Until: since.Add(time.Hour)})
	require.NoError(t, err)

	require.Equal(t, audit.Population{Jobs: 2, Servers: 2, Since: since, Until: since.Add(time.Hour)}, r.Population,
		"jobs before --since are not in the population")
	require.Len(t, r.Pairs, 1)
	p := r.Pairs[0]
	require.Equal(t, before, p.FirstJobID)
	require.Equal(t, after, p.SecondJobID)
	require.True(t, p.FirstBeforeSince)
	require.Equal(t, 5*time.Minute, p.RequestGap)
	require.Equal(t, audit.ClassAfterFinish, p.Class)

	require.NotNil(t, r.Closest)
	require.Equal(t, near, r.Closest.ServerID,
		"a 31-minute pair reaching before --since is not the closest; the duplicate is")
}

func TestPairsFallInClassesCountedApart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	afterFinish := f.server("after-finish")
	f.finished(afterFinish, t0, 43*time.Second, "")
	f.finished(afterFinish, t0.Add(43*time.Second+168*time.Millisecond), time.Second, "")

	overlap := f.server("overlap")
	f.finished(overlap, t0.Add(time.Minute), 5*time.Second, "")
	f.finished(overlap, t0.Add(time.Minute+time.Second), time.Second, "")

	open := f.server("open")
	f.open(open, t0.Add(2*time.Minute), "")
	f.finished(open, t0.Add(4*time.Minute), time.Second, "")

	for i, reason := range []string{"maintainer_claim", "manual"} {
		s := f.server("recheck-" + reason)
		at := t0.Add(time.Duration(5+i) * time.Minute)
		f.finished(s, at, time.Second, "")
		f.finished(s, at.Add(30*time.Second), time.Second, reason)
	}
	claimedMidCheck := f.server("claimed-mid-check")
	f.finished(claimedMidCheck, t0.Add(7*time.Minute), 10*time.Second, "")
	f.finished(claimedMidCheck, t0.Add(7*time.Minute+time.Second), time.Second, "maintainer_claim")

	r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{Since: t0, Until: t0.Add(time.Hour)})
	require.NoError(t, err)

	got := map[string]audit.Pair{}
	for _, p := range r.Pairs {
		got[p.Slug] = p
	}
	require.Len(t, got, 6)

	p := got["after-finish"]
	require.Equal(t, audit.ClassAfterFinish, p.Class)
	require.Equal(t, 168*time.Millisecond, *p.GapAfterFinish, "the incident's 0.168 s after the first job finished")

	p = got["overlap"]
	require.Equal(t, audit.ClassOverlap, p.Class)
	require.Equal(t, -4*time.Second, *p.GapAfterFinish, "claimed before the first finished: a negative gap")

	p = got["open"]
	require.Equal(t, audit.ClassOpen, p.Class)
	require.Nil(t, p.FirstFinishedAt)
	require.Nil(t, p.GapAfterFinish)

	for _, slug := range []string{"recheck-maintainer_claim", "recheck-manual", "claimed-mid-check"} {
		require.Equal(t, audit.ClassExplained, got[slug].Class, slug)
		require.True(t, got[slug].Explained(), slug)
	}
	require.Equal(t, "manual", got["recheck-manual"].SecondReason)

	require.Equal(t, 1, r.Count(audit.ClassAfterFinish))
	require.Equal(t, 1, r.Count(audit.ClassOverlap))
	require.Equal(t, 1, r.Count(audit.ClassOpen))
	require.Equal(t, 3, r.Count(audit.ClassExplained))
	require.Equal(t, 3, r.Unexplained())
	for i := 1; i < len(r.Pairs); i++ {
		require.False(t, r.Pairs[i].SecondRequestedAt.Before(r.Pairs[i-1].SecondRequestedAt),
			"pairs come in the order the second jobs were requested")
	}
}

func TestSplitAtBreaksThePopulationIntoPeriods(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	since, live, fixed, until := t0.Add(-7*24*time.Hour), t0, t0.Add(78*time.Minute), t0.Add(24*time.Hour)
	s1, s2, s3 := f.server("s1"), f.server("s2"), f.server("s3")
	f.finished(s1, t0.Add(-3*24*time.Hour), time.Second, "")
	f.finished(s2, t0.Add(-2*24*time.Hour), time.Second, "")
	f.finished(s3, t0.Add(-24*time.Hour), time.Second, "")

	f.finished(s1, t0.Add(10*time.Minute), time.Second, "")
	s4, s5 := f.server("s4"), f.server("s5")
	f.finished(s4, t0, 43*time.Second, "")
	f.finished(s4, t0.Add(43*time.Second+168*time.Millisecond), time.Second, "")
	f.finished(s5, t0.Add(5*time.Minute), 43*time.Second, "")
	f.finished(s5, t0.Add(5*time.Minute+43*time.Second+236*time.Millisecond), time.Second, "")

	f.finished(s1, t0.Add(13*time.Hour), time.Second, "")
	f.finished(s2, t0.Add(2*time.Hour), time.Second, "")

	r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{
		Since: since, Until: until, SplitAt: []time.Time{fixed, live, fixed}})
	require.NoError(t, err)

	require.Equal(t, []audit.Period{
		{Since: since, Until: live, Jobs: 3, Servers: 3},
		{Since: live, Until: fixed, Jobs: 5, Servers: 3, Pairs: 2, Unexplained: 2},
		{Since: fixed, Until: until, Jobs: 2, Servers: 2},
	}, r.Periods, "split times are sorted and a repeat is one split")
	require.Equal(t, int64(10), r.Population.Jobs)
	require.Equal(t, int64(5), r.Population.Servers, "a server in several periods counts once in the population")
	require.Equal(t, s4, r.Closest.ServerID)
	require.Equal(t, 43*time.Second+168*time.Millisecond, r.Closest.Gap)
}

func TestAnEmptyPopulationReportsZeroAndNoClosestPair(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server("elsewhere")
	f.finished(s, t0.Add(-time.Hour), time.Second, "")
	f.finished(s, t0.Add(2*time.Hour), time.Second, "")

	r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{Since: t0, Until: t0.Add(time.Hour)})
	require.NoError(t, err)

	require.Zero(t, r.Population.Jobs)
	require.Zero(t, r.Population.Servers)
	require.Empty(t, r.Pairs)
	require.Nil(t, r.Closest)
	require.Equal(t, []audit.Period{{Since: t0, Until: t0.Add(time.Hour)}}, r.Periods)

	raw, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"population": {"jobs": 0, "servers": 0, "since": "2026-10-07T20:55:00Z", "until": "2026-10-07T21:55:00Z"},
		"window_seconds": 600.000,
		"duplicate_count": 0,
		"unexplained_count": 0,
		"class_counts": {"after_finish": 0, "overlap": 0, "open": 0, "explained": 0, "failover": 0},
		"closest_gap_seconds": null,
		"closest_pair": null,
		"duplicates": [],
		"periods": [{"since": "2026-10-07T20:55:00Z", "until": "2026-10-07T21:55:00Z", "jobs": 0, "servers": 0, "pairs": 0, "unexplained": 0}]
	}`, string(raw))
}

func TestTheClosestPairIsFoundWhenNothingIsADuplicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b, c := f.server("a"), f.server("b"), f.server("c")
	aFirst := f.finished(a, t0, time.Second, "")
	aSecond := f.finished(a, t0.Add(13*time.Minute+35*time.Second), time.Second, "")
	f.finished(b, t0, time.Second, "")
	f.finished(b, t0.Add(20*time.Minute), time.Second, "")
	f.finished(c, t0.Add(time.Hour), time.Second, "")
	f.finished(c, t0.Add(time.Hour+13*time.Minute+35*time.Second), time.Second, "")

	r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{Since: t0, Until: t0.Add(3 * time.Hour)})
	require.NoError(t, err)

	require.Empty(t, r.Pairs)
	require.Equal(t, &audit.ClosestPair{ServerID: a, Slug: "a", FirstJobID: aFirst, SecondJobID: aSecond,
		FirstRequestedAt: t0, SecondRequestedAt: t0.Add(13*time.Minute + 35*time.Second),
		Gap: 13*time.Minute + 35*time.Second}, r.Closest, "a tie goes to the lowest server id")
	_ = c
}

func TestBadParametersNameTheParameter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name  string
		p     audit.DuplicatesParams
		param string
	}{
		{"a missing since", audit.DuplicatesParams{Until: t0}, "since"},
		{"since after until", audit.DuplicatesParams{Since: t0, Until: t0.Add(-time.Second)}, "since"},
		{"since equal to until", audit.DuplicatesParams{Since: t0, Until: t0}, "since"},
		{"a negative window", audit.DuplicatesParams{Since: t0, Until: t0.Add(time.Hour), Window: -time.Second}, "window"},
		{"a split at since", audit.DuplicatesParams{Since: t0, Until: t0.Add(time.Hour), SplitAt: []time.Time{t0}}, "split-at"},
		{"a split after until", audit.DuplicatesParams{Since: t0, Until: t0.Add(time.Hour), SplitAt: []time.Time{t0.Add(2 * time.Hour)}}, "split-at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Duplicates(f.ctx, f.pool, tc.p)
			var pe *audit.ParamError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.param, pe.Param)
			require.Equal(t, 2, pe.ExitCode())
		})
	}
}

func TestTheStreamingScanAgreesWithTheWindowFunction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start := t0.Add(-24 * time.Hour)
	loadMonth(t, f.ctx, f.pool, 400, 12, start, 24*time.Hour, 7)
	// Plant pairs at the edges of the window around the population's start, too.
	edge := f.server("edge")
	f.finished(edge, t0.Add(-10*time.Minute), time.Second, "")
	f.finished(edge, t0, time.Second, "")
	under := f.server("under")
	f.finished(under, t0.Add(-10*time.Minute+time.Microsecond), time.Second, "")
	f.finished(under, t0, time.Second, "")

	for _, since := range []time.Time{start, start.Add(7 * time.Hour), t0} {
		r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{Since: since, Until: t0.Add(time.Hour)})
		require.NoError(t, err)
		jobs, pairs, err := windowCount(t, f.ctx, f.pool, since, t0.Add(time.Hour), audit.DefaultWindow)
		require.NoError(t, err)
		require.Equal(t, jobs, r.Population.Jobs, "since %s", since)
		require.Equal(t, pairs, int64(len(r.Pairs)), "since %s", since)
		require.NotZero(t, pairs)
	}
}
