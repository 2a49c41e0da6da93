package statuspage

import (
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"time"

	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// pageView is what every server page carries.
type pageView struct {
	L         *pagesLang
	Other     *pagesLang
	OtherPath string
	// Err is set when there is nothing else to show (not found, database unreadable).
	Err        string
	AsOf       string
	StatusPath string
	Title      string
}

// entriesArg is what the "entries" template lays out.
type entriesArg struct {
	L    *pagesLang
	Rows []entryView
}

// Entries hands a list of servers to the "entries" template.
func (p pageView) Entries(rows []entryView) entriesArg { return entriesArg{L: p.L, Rows: rows} }

// entryView is one server in a directory list.
type entryView struct {
	Slug, Path, Kind, Status, Outcome, OutcomeClass, FailingSince, LastRun, Uptime, CertExpiry string
}

type sortLink struct {
	Label, Href string
	Current     bool
}

type directoryView struct {
	pageView
	Counts                       []card
	Failing, Expiring, Page      []entryView
	MoreFailing, MoreExpiring    string
	Sorts                        []sortLink
	PageText, PrevHref, NextHref string
}

func (l *pagesLang) entry(e queries.DirectoryEntry) entryView {
	v := entryView{Slug: e.Slug, Path: l.Prefix + "/servers/" + url.PathEscape(e.Slug), Kind: e.Kind, Status: e.Status,
		Outcome: l.outcome(e.LastOutcome), OutcomeClass: e.LastOutcome, FailingSince: "-", LastRun: "-", Uptime: "-", CertExpiry: "-"}
	if e.FailingSince != nil {
		v.FailingSince = timestamp(*e.FailingSince)
	}
	if e.LastRunAt != nil {
		v.LastRun = timestamp(*e.LastRunAt)
	}
	if e.Uptime30d != nil {
		v.Uptime = percent(*e.Uptime30d)
	}
	if e.CertNotAfter != nil {
		v.CertExpiry = timestamp(*e.CertNotAfter)
	}
	return v
}

func percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

func (v *directoryView) fill(d *history.Directory) {
	l := v.L
	v.AsOf, v.StatusPath = timestamp(d.At), l.Prefix+"/status"
	if l.Prefix == "" {
		v.StatusPath = "/status"
	}
	for _, c := range d.Counts {
		v.Counts = append(v.Counts, card{Label: l.outcome(c.Outcome), Value: strconv.FormatInt(c.Servers, 10),
			Alert: c.Outcome == "failed" || c.Outcome == "error"})
	}
	for _, e := range d.Failing {
		v.Failing = append(v.Failing, l.entry(e))
	}
	for _, e := range d.Expiring {
		v.Expiring = append(v.Expiring, l.entry(e))
	}
	for _, e := range d.Page {
		v.Page = append(v.Page, l.entry(e))
	}
	if n := d.FailingTotal - int64(len(d.Failing)); n > 0 {
		v.MoreFailing = fmt.Sprintf(l.More, n)
	}
	if n := d.ExpiringTotal - int64(len(d.Expiring)); n > 0 {
		v.MoreExpiring = fmt.Sprintf(l.More, n)
	}
	q := d.Query
	href := func(sort string, desc bool) string {
		return directoryHref(l.Prefix+"/servers", history.DirectoryQuery{Sort: sort, Desc: desc, Page: 1, PerPage: q.PerPage})
	}
	labels := map[string]string{"slug": l.Server, "outcome": l.LastOutcome, "uptime": l.Uptime30d}
	for _, s := range history.Sorts {
		desc := s == q.Sort && !q.Desc // a second click reverses
		v.Sorts = append(v.Sorts, sortLink{Label: labels[s], Href: href(s, desc), Current: s == q.Sort})
	}
	v.PageText = fmt.Sprintf("%s %d / %d · %d %s", l.Page, q.Page, d.Pages(), d.Servers, l.Servers)
	v.PrevHref, v.NextHref = pageLinks(l.Prefix+"/servers", d)
}

// pageLinks are the links to the pages before and after d ("" at either end): each carries the
// cursor of the row next to it (keyset: a deep page costs what the first does) and the page number
// it shows.
func pageLinks(path string, d *history.Directory) (prev, next string) {
	q := d.Query
	if d.Prev != nil {
		prev = directoryHref(path, history.DirectoryQuery{Sort: q.Sort, Desc: q.Desc, Page: max(1, q.Page-1), PerPage: q.PerPage, Before: d.Prev})
	}
	if d.Next != nil {
		next = directoryHref(path, history.DirectoryQuery{Sort: q.Sort, Desc: q.Desc, Page: q.Page + 1, PerPage: q.PerPage, After: d.Next})
	}
	return prev, next
}

// directoryHref is the link that reads q from path.
func directoryHref(path string, q history.DirectoryQuery) string {
	u := url.Values{"sort": {q.Sort}, "page": {strconv.Itoa(q.Page)}, "per_page": {strconv.Itoa(q.PerPage)}}
	if q.Desc {
		u.Set("desc", "1")
	}
	if q.After != nil {
		u.Set("after", history.EncodeCursor(*q.After))
	}
	if q.Before != nil {
		u.Set("before", history.EncodeCursor(*q.Before))
	}
	return path + "?" + u.Encode()
}

type runView struct {
	ID, Started, Outcome, OutcomeClass, Duration, Why string
}

type serverView struct {
	pageView
	Slug, Kind, URL, Plan, Status, StatusChange, NextCheck string
	Uptime24h, Uptime7d, Uptime30d, Latency, Cert, Tools   string
	Bar, LatencyChart, ToolsChart                          template.HTML
	Runs                                                   []runView
}

func (v *serverView) fill(h *history.ServerHistory) {
	l := v.L
	s := h.Server
	v.AsOf, v.StatusPath = timestamp(h.At), l.Prefix+"/status"
	v.Slug, v.Kind, v.URL, v.Status = s.Slug, s.Kind, check.RedactURL(s.EndpointURL), s.Status
	v.Plan = fmt.Sprintf("%s, %s", s.Plan, l.duration(s.CheckInterval))
	if c := h.StatusChange; c != nil {
		v.StatusChange = fmt.Sprintf(l.StatusChange, c.StatusTo, c.ChangedBy, timestamp(c.ChangedAt), c.Reason)
	}
	v.NextCheck = h.Next.State
	if h.Next.At != nil {
		v.NextCheck = timestamp(*h.Next.At) + " (" + h.Next.State + ")"
	}
	v.NextCheck += ": " + h.Next.Why
	opt := func(f *float64) string {
		if f == nil {
			return "-"
		}
		return percent(*f)
	}
	v.Uptime24h, v.Uptime7d, v.Uptime30d = opt(h.Uptime24h), opt(h.Uptime7d), opt(h.Uptime30d)
	v.Latency, v.Cert, v.Tools = "-", "-", l.ToolsNone
	if h.LatencyP50 != nil {
		v.Latency = fmt.Sprintf(l.LatencyOK, l.duration(*h.LatencyP50), l.duration(*h.LatencyP95))
	}
	if h.Cert != nil {
		v.Cert = fmt.Sprintf(l.DaysLeft, timestamp(h.Cert.CertNotAfter), *h.CertDaysLeft())
	}
	if h.Tools != nil {
		v.Tools = fmt.Sprintf(l.ToolsSince, h.Tools.Count, timestamp(h.Tools.ChangedAt))
	}
	if h.AuthRequired() {
		v.Tools = l.ToolsAuth
	}
	v.Bar = uptimeBar(l, h.Bar)
	from := h.At.Add(-30 * 24 * time.Hour)
	var lat, tools []chartPoint
	for _, p := range h.Series {
		if p.Outcome == "ok" {
			lat = append(lat, chartPoint{At: p.StartedAt, Value: p.Duration.Seconds()})
		}
		if p.Tools != nil && (len(tools) == 0 || tools[len(tools)-1].Value != float64(*p.Tools)) {
			tools = append(tools, chartPoint{At: p.StartedAt, Value: float64(*p.Tools)})
		}
	}
	v.LatencyChart = timeChart("latency-chart", lat, from, h.At, false, func(s float64) string {
		return l.duration(time.Duration(s * float64(time.Second)))
	}, l.NoData)
	v.ToolsChart = timeChart("tools-chart", tools, from, h.At, true, func(n float64) string { return strconv.Itoa(int(n)) }, l.NoData)
	for _, r := range h.LastRuns {
		why := r.Summary
		if r.Error != nil && *r.Error != "" {
			why = *r.Error
		}
		v.Runs = append(v.Runs, runView{ID: strconv.FormatInt(r.ID, 10), Started: timestamp(r.StartedAt), Outcome: l.outcome(r.Outcome),
			OutcomeClass: r.Outcome, Duration: l.duration(r.Duration()), Why: why})
	}
}

// duration writes d as the page's language writes durations (lang.duration).
func (l *pagesLang) duration(d time.Duration) string {
	if l.Code == chinese.Code {
		return chinese.duration(d)
	}
	return english.duration(d)
}

// directoryJSON is the documented shape of /servers.json.
type directoryJSON struct {
	At            time.Time                `json:"at"`
	Counts        map[string]int64         `json:"counts"`
	Failing       []queries.DirectoryEntry `json:"failing"`
	FailingTotal  int64                    `json:"failing_total"`
	Expiring      []queries.DirectoryEntry `json:"expiring"`
	ExpiringTotal int64                    `json:"expiring_total"`
	Sort          string                   `json:"sort"`
	Desc          bool                     `json:"desc"`
	Page          int                      `json:"page"`
	PerPage       int                      `json:"per_page"`
	Pages         int                      `json:"pages"`
	Total         int64                    `json:"total"`
	Servers       []queries.DirectoryEntry `json:"servers"`
	// Prev and Next link the pages around this one by cursor (null at either end).
	Prev *string `json:"prev"`
	Next *string `json:"next"`
}

func toDirectoryJSON(d *history.Directory) directoryJSON {
	counts := map[string]int64{}
	for _, c := range d.Counts {
		key := c.Outcome
		if key == "" {
			key = "never_run"
		}
		counts[key] = c.Servers
	}
	nonNil := func(in []queries.DirectoryEntry) []queries.DirectoryEntry {
		out := make([]queries.DirectoryEntry, 0, len(in))
		for _, e := range in {
			e.FailingSince, e.LastRunAt, e.CertNotAfter = utc(e.FailingSince), utc(e.LastRunAt), utc(e.CertNotAfter)
			out = append(out, e)
		}
		return out
	}
	prev, next := pageLinks("/servers.json", d)
	orNull := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return directoryJSON{Prev: orNull(prev), Next: orNull(next), At: d.At, Counts: counts, Failing: nonNil(d.Failing), FailingTotal: d.FailingTotal,
		Expiring: nonNil(d.Expiring), ExpiringTotal: d.ExpiringTotal, Sort: d.Query.Sort, Desc: d.Query.Desc,
		Page: d.Query.Page, PerPage: d.Query.PerPage, Pages: d.Pages(), Total: d.Servers, Servers: nonNil(d.Page)}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
