package statuspage

import (
	"fmt"
	"strconv"
	"time"

	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/queries"
)

// maxPairs bounds the duplicate pairs a page lists; the count is always complete.
const maxPairs = 50

// view is what the template shows: every value already written out in the page's language, so
// the template only lays it out.
type view struct {
	L       *lang
	Other   *lang
	Refresh int // seconds

	// Err is set when the database could not be read; nothing else is then.
	Err bool

	GeneratedAt, GeneratedAtISO string
	Cards                       []card
	Release                     *releaseView
	Due                         dueView
	OpenJobs                    []openJobView
	MoreJobs                    string
	AnyAdvanced, AnyStale       bool
	Rounds                      []roundView
	Pairs                       []pairView
	MorePairs                   string
	Workers                     *workersView
	Alerts                      *alertsView

	// Standby says the page reads a hot standby, and how far behind it is ("" on a primary).
	Standby string
}

type card struct {
	Label, Value string
	// Alert colours the card: something an operator should look at.
	Alert bool
}

type releaseView struct {
	Version, Kind, DeployedAt, DeployedBy, Fanout, ClaimLimit, Concurrency, MinSpacing, FinishMode string
}

type dueView struct {
	Count, Held        int
	OldestSlug, Detail string
}

type openJobView struct {
	Job, Server, Round, Invocation, Requested, RequestedISO, Age string
	Stale, Leased, Advanced                                      bool
}

type roundView struct {
	ID, Started, StartedISO, Trigger, Version, Duration string
	Jobs, Runs, Servers, Failures, OpenJobs             int
	Running, Dead, Short, Degraded                      bool
	// Lost says the checks the round lost ("" when none), whatever its state.
	Lost string
}

type pairView struct {
	Server, FirstJob, SecondJob, SecondRequested, RequestGap, GapAfterFinish, Class string
	Explained                                                                       bool
}

// newView writes the report out in language l.
func newView(l, other *lang, refresh time.Duration, r *status.Report) view {
	v := view{L: l, Other: other, Refresh: int(refresh / time.Second)}
	if r == nil {
		v.Err = true
		return v
	}
	v.GeneratedAt, v.GeneratedAtISO = timestamp(r.GeneratedAt), r.GeneratedAt.UTC().Format(time.RFC3339)
	if r.Standby != nil {
		v.Standby = fmt.Sprintf(l.Standby, l.duration(r.Standby.ReplayLag))
	}
	v.Cards = []card{
		{Label: l.CardDue, Value: strconv.Itoa(r.Due.Count)},
		{Label: l.CardOpen, Value: strconv.Itoa(r.OpenCount)},
		{Label: l.CardStale, Value: strconv.Itoa(r.StaleCount), Alert: r.StaleCount > 0},
		// Explained pairs (an explicit re-check) are not the incident's: the card counts the others.
		{Label: l.CardDuplicates, Value: strconv.Itoa(r.Duplicates.Unexplained()), Alert: r.Duplicates.Unexplained() > 0},
	}
	if rel := r.ActiveRelease; rel != nil {
		v.Release = &releaseView{Version: rel.Version, Kind: rel.Kind, DeployedAt: timestamp(rel.DeployedAt),
			DeployedBy: rel.DeployedBy, Fanout: strconv.Itoa(rel.Fanout), ClaimLimit: strconv.Itoa(rel.ClaimLimit),
			Concurrency: strconv.Itoa(rel.Concurrency), MinSpacing: l.duration(rel.MinSpacing.D()), FinishMode: rel.Finish}
	}
	v.Due = dueView{Count: r.Due.Count, Held: r.Due.Held}
	if o := r.Due.Oldest; o != nil {
		v.Due.OldestSlug = o.Slug
		v.Due.Detail = fmt.Sprintf(l.DueDetail, l.duration(o.Overdue), timestamp(o.NextCheckAt))
	}
	for _, j := range r.OpenJobs {
		v.OpenJobs = append(v.OpenJobs, openJobView{Job: strconv.FormatInt(j.JobID, 10), Server: j.Slug,
			Round: optional(j.RoundID), Invocation: optional(j.Invocation), Requested: timestamp(j.RequestedAt),
			RequestedISO: j.RequestedAt.Format(time.RFC3339Nano), Age: l.duration(j.Age),
			Stale: j.Stale, Leased: j.Leased, Advanced: j.Advanced})
		v.AnyStale = v.AnyStale || j.Stale
		v.AnyAdvanced = v.AnyAdvanced || j.Advanced
	}
	if more := r.OpenCount - len(r.OpenJobs); more > 0 {
		v.MoreJobs = fmt.Sprintf(l.MoreJobs, more)
	}
	for _, rd := range r.RecentRounds {
		rv := roundView{ID: strconv.FormatInt(rd.ID, 10), Started: timestamp(rd.StartedAt),
			StartedISO: rd.StartedAt.Format(time.RFC3339Nano), Trigger: translate(l.Triggers, rd.Trigger),
			Version: rd.Version, Jobs: rd.Jobs, Runs: rd.Runs, Servers: rd.Servers, Failures: rd.Failures,
			OpenJobs: rd.OpenJobs, Running: rd.State == queries.RoundRunning, Dead: rd.State == queries.RoundDead}
		if d := rd.Duration(); d != nil {
			rv.Duration = l.duration(*d)
		} else if rd.State == queries.RoundRecovered {
			rv.Duration = l.Recovered
		}
		// Fewer servers than jobs is what the incident's rounds looked like: a server claimed twice.
		rv.Short = rd.Servers < rd.Jobs
		rv.Degraded = rd.Degraded != nil
		switch {
		case rd.Lost == 1:
			rv.Lost = l.LostOne
		case rd.Lost > 1:
			rv.Lost = fmt.Sprintf(l.LostMany, rd.Lost)
		}
		v.Rounds = append(v.Rounds, rv)
	}
	v.Workers = newWorkersView(l, r)
	v.Alerts = newAlertsView(l, r)
	if rep := r.Duplicates.Report; rep != nil {
		for i, p := range rep.Pairs {
			if i == maxPairs {
				v.MorePairs = fmt.Sprintf(l.MorePairs, len(rep.Pairs)-maxPairs)
				break
			}
			pv := pairView{Server: p.Slug, FirstJob: strconv.FormatInt(p.FirstJobID, 10),
				SecondJob: strconv.FormatInt(p.SecondJobID, 10), SecondRequested: timestamp(p.SecondRequestedAt),
				RequestGap: l.duration(p.RequestGap), Class: translate(l.Classes, p.Class), Explained: p.Explained()}
			if p.GapAfterFinish != nil {
				pv.GapAfterFinish = l.duration(*p.GapAfterFinish)
			} else {
				pv.GapAfterFinish = "–"
			}
			v.Pairs = append(v.Pairs, pv)
		}
	}
	return v
}

func optional[T int | int32 | int64](p *T) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatInt(int64(*p), 10)
}

// translate names a value in the page's language, or shows it as stored when it has no name.
func translate[K ~string](names map[K]string, k K) string {
	if s, ok := names[k]; ok {
		return s
	}
	return string(k)
}
