package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// invocationJSON is one invocation's final counts.
type invocationJSON struct {
	Invocation int `json:"invocation"`
	Claimed    int `json:"claimed"`
	Done       int `json:"done"`
}

// roundJSON is the documented JSON shape of 'run round -o json'.
type roundJSON struct {
	RoundID             int64     `json:"round_id"`
	StartedAt           time.Time `json:"started_at"`
	FinishedAt          time.Time `json:"finished_at"`
	DurationSeconds     float64   `json:"duration_seconds"`
	Invocations         int       `json:"invocations"`
	Jobs                int       `json:"jobs"`
	Runs                int       `json:"runs"`
	Servers             int       `json:"servers"`
	OK                  int       `json:"ok"`
	Failed              int       `json:"failed"`
	Errors              int       `json:"errors"`
	Abandoned           int       `json:"abandoned"`
	OpenJobs            int       `json:"open_jobs"`
	RunsUnsigned        int       `json:"runs_unsigned"`
	CountsUnknown       bool      `json:"counts_unknown"`
	KeyID               *string   `json:"key_id"`
	StoppedClaiming     bool      `json:"stopped_claiming"`
	Interrupted         bool      `json:"interrupted"`
	AdvanceMisses       int       `json:"advance_misses"`
	JobsClosedElsewhere int       `json:"jobs_closed_elsewhere"`
	Fenced              int       `json:"fenced"`
	// FinishBatches: batches of finishes sent; FinishBatchesFailed of them failed (their jobs were
	// finished one at a time), counted by cause in FinishBatchCauses.
	FinishBatches       int            `json:"finish_batches"`
	FinishBatchesFailed int            `json:"finish_batches_failed"`
	FinishBatchCauses   map[string]int `json:"finish_batch_causes"`
	Problems            []string       `json:"problems"`
	// Degraded: the storm guard judged the round degraded (docs/alerts.md).
	Degraded bool `json:"degraded"`
	// Spooled results could not be stored and wait in SpoolFile; Recovered were stored from the
	// spool before the round claimed.
	Spooled   int     `json:"spooled"`
	SpoolFile *string `json:"spool_file"`
	Recovered int     `json:"recovered"`
	// JournalSetAside: failover journals set aside for a person to read, one line each;
	// SpoolSetAside: spool files, as the replay before the round claimed set them aside.
	JournalSetAside []string           `json:"journal_set_aside"`
	SpoolSetAside   []string           `json:"spool_set_aside"`
	Settings        settings.Round     `json:"settings"`
	Overrides       []overrideJSON     `json:"overrides"`
	PerInvocation   []invocationJSON   `json:"per_invocation"`
	Failures        []roundFailureJSON `json:"failures"`
}

func renderRoundSummary(f *factory, format string, s *probe.Summary, overrides []release.Override, failures []queries.Run,
	degraded *queries.DegradedRound) error {
	return render.Output(f.IO.Out, format, roundSummaryView(f, s, overrides, failures, degraded))
}

// roundSummaryView is a round's summary: roundJSON, or the table and the lines that say what
// went wrong.
func roundSummaryView(f *factory, s *probe.Summary, overrides []release.Override, failures []queries.Run,
	degraded *queries.DegradedRound) render.View {
	out := roundJSON{RoundID: s.RoundID, StartedAt: s.StartedAt.UTC(), FinishedAt: s.FinishedAt.UTC(),
		DurationSeconds: s.Duration().Seconds(), Invocations: s.Invocations, Jobs: s.Jobs, Runs: s.Runs,
		Servers: s.Servers, OK: s.OK, Failed: s.Failed, Errors: s.Errors, Abandoned: s.Abandoned,
		OpenJobs: s.OpenJobs, RunsUnsigned: s.RunsUnsigned, CountsUnknown: s.CountsUnknown,
		StoppedClaiming: s.StoppedClaiming, Interrupted: s.Interrupted,
		AdvanceMisses: s.AdvanceMisses, JobsClosedElsewhere: s.JobsClosedElsewhere, Fenced: s.Fenced,
		FinishBatches: s.FinishBatches.Batches, FinishBatchesFailed: s.FinishBatches.Failed,
		FinishBatchCauses: causesOrNone(s.FinishBatches.Causes),
		Problems:          append([]string{}, s.Problems...), Settings: settings.RoundOf(s.Settings),
		Overrides:     toOverridesJSON(overrides),
		PerInvocation: make([]invocationJSON, 0, len(s.PerInvocation)), Failures: toRoundFailuresJSON(failures),
		Degraded: degraded != nil}
	if s.KeyID != "" {
		out.KeyID = &s.KeyID
	}
	out.Spooled = s.Spooled
	if s.SpoolFile != "" {
		out.SpoolFile = &s.SpoolFile
	}
	if s.Recovered != nil {
		out.Recovered = s.Recovered.Stored
	}
	out.JournalSetAside = append([]string{}, s.JournalSetAside...)
	out.SpoolSetAside = []string{}
	if s.Recovered != nil {
		out.SpoolSetAside = append(out.SpoolSetAside, s.Recovered.SetAside...)
	}
	for _, p := range s.PerInvocation {
		out.PerInvocation = append(out.PerInvocation, invocationJSON{Invocation: p.Invocation, Claimed: p.Claimed, Done: p.Done})
	}
	return render.View{JSON: out, Text: func() error { return writeRoundSummary(f, s, overrides, failures, degraded) }}
}

// writeRoundSummary writes a round's table, then a line for each thing that went wrong.
func writeRoundSummary(f *factory, s *probe.Summary, overrides []release.Override, failures []queries.Run,
	degraded *queries.DegradedRound) error {
	st := render.StylesFor(f.IO)
	w := f.IO.Out
	tbl := render.NewTable(w, "ROUND", "INVOCATIONS", "JOBS", "RUNS", "SERVERS", "OK", "FAILED", "ERRORS", "OPEN JOBS", "DURATION")
	counts := []any{s.Jobs, s.Runs, s.Servers, s.OK, s.Failed, s.Errors, s.OpenJobs}
	if s.CountsUnknown {
		for i := range counts {
			counts[i] = "?"
		}
	}
	tbl.Row(append(append([]any{s.RoundID, s.Invocations}, counts...), render.Duration(s.Duration()))...)
	if err := tbl.Render(); err != nil {
		return err
	}
	if s.CountsUnknown {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("the database did not answer when the round ended: its counts are unknown, "+
			"not zero; 'probectl status' shows round %d once the database is back", s.RoundID)))
	}
	signed := "unsigned"
	switch {
	case s.SignedByWorkers:
		signed = "signed by the workers, each with its own key"
	case s.KeyID != "":
		signed = "signed with " + s.KeyID
	}
	c := s.Settings
	fmt.Fprintf(w, "%s\n", st.Muted.Render(fmt.Sprintf("%s round, version %s: fan-out %d, claim limit %d, concurrency %d, min spacing %s, finish %s, %s",
		c.Trigger, c.Version, c.Fanout, c.ClaimLimit, c.Concurrency, render.Duration(c.MinSpacing.D()), c.Finish, signed)))
	for _, o := range overrides {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("%s %s overrides release #%d's %s", flagOf(o.Setting), o.Round, *c.ReleaseID, o.Release)))
	}
	if degraded != nil {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("degraded: too many checks failed at once (%d of %d when the storm guard judged "+
			"it; the prober's own network, most likely): its failures counted toward no server's down threshold, one "+
			"prober.degraded alert was sent instead (docs/alerts.md)", degraded.Failed, degraded.Checked)))
	}
	if s.ClaimedTwice() {
		fmt.Fprintln(w, st.Fail.Render(fmt.Sprintf("%d jobs covered %d servers: a server was claimed twice", s.Jobs, s.Servers)))
	}
	if s.OpenJobs > 0 {
		fmt.Fprintln(w, st.Fail.Render(fmt.Sprintf("%d job(s) left open: their finish failed (see the errors above)", s.OpenJobs)))
	}
	if s.Recovered != nil && s.Recovered.Stored > 0 {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("stored %d result(s) an earlier round had spooled in %s", s.Recovered.Stored, s.Recovered.Dir)))
	}
	if j := s.Journal; j != nil && j.Switched {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("the database failed over (now on timeline %d, first seen %s): %d result(s) it lacked "+
			"were stored again from the failover journal (%d under jobs of their own), %d were there", j.Timeline,
			j.SwitchSeen.UTC().Format(time.RFC3339), j.Stored, j.Restored, j.AlreadyStored)))
	}
	if s.Recovered != nil {
		for _, a := range s.Recovered.SetAside {
			fmt.Fprintln(w, st.Warn.Render("a spool file was set aside (probectl status shows it until it is removed): "+a))
		}
	}
	for _, a := range s.JournalSetAside {
		fmt.Fprintln(w, st.Warn.Render("a failover journal was set aside (probectl status shows it until it is removed): "+a))
	}
	if s.Spooled > 0 {
		fmt.Fprintln(w, st.Fail.Render(fmt.Sprintf("%d result(s) could not be stored and wait in %s: the next run round (or runs recover) stores them",
			s.Spooled, s.SpoolFile)))
	}
	if s.StoppedClaiming {
		fmt.Fprintln(w, st.Fail.Render("stopped claiming: advancing a next check time failed twice"))
	}
	if s.Interrupted {
		fmt.Fprintln(w, st.Fail.Render("interrupted: the round was stopped before it ended; checks it stopped midway are stored as interrupted"))
	}
	if s.AdvanceMisses > 0 {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("%d next check time(s) not advanced: changed since the claim (re-check, pause or delisting)", s.AdvanceMisses)))
	}
	if s.JobsClosedElsewhere > 0 {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("%d job(s) had been closed as abandoned before their finish; their runs are stored", s.JobsClosedElsewhere)))
	}
	if s.FinishBatches.Failed > 0 {
		fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("%d of %d batch(es) of finishes failed; their jobs were finished one at a time",
			s.FinishBatches.Failed, s.FinishBatches.Batches)))
		for _, cause := range slices.Sorted(maps.Keys(s.FinishBatches.Causes)) {
			fmt.Fprintln(w, st.Warn.Render(fmt.Sprintf("  %d× %s", s.FinishBatches.Causes[cause], render.Printable(cause))))
		}
	}
	return writeRoundFailures(w, s.RoundID, failures)
}

// planServerJSON is one due server in the JSON of 'run round --dry-run'.
type planServerJSON struct {
	ServerID        int64      `json:"server_id"`
	Slug            string     `json:"slug"`
	Status          string     `json:"status"`
	State           string     `json:"state"`
	Reason          string     `json:"reason"`
	NextCheckAt     time.Time  `json:"next_check_at"`
	LastRequestedAt *time.Time `json:"last_requested_at"`
	ClaimableAt     *time.Time `json:"claimable_at"`
	WouldClaim      bool       `json:"would_claim"`
	Why             string     `json:"why"`
	SSRFRefused     *string    `json:"ssrf_refused"`
}

// planJSON is the documented JSON shape of 'run round --dry-run -o json'.
type planJSON struct {
	DryRun      bool             `json:"dry_run"`
	Now         time.Time        `json:"now"`
	Capacity    int              `json:"capacity"`
	Due         int              `json:"due"`
	Claimable   int              `json:"claimable"`
	WouldClaim  int              `json:"would_claim"`
	Skipped     map[string]int   `json:"skipped"`
	NotDue      int              `json:"not_due"`
	NextDueAt   *time.Time       `json:"next_due_at"`
	Leased      int              `json:"leased"`
	SSRFRefused int              `json:"ssrf_refused"`
	Settings    settings.Round   `json:"settings"`
	Servers     []planServerJSON `json:"servers"`
}

func renderPlan(f *factory, format string, p *probe.Plan) error {
	out := planJSON{DryRun: true, Now: p.Now.UTC(), Capacity: p.Capacity, Due: len(p.Servers),
		Claimable: p.Claimable, WouldClaim: p.WouldClaim, Skipped: p.Skipped, NotDue: p.NotDue,
		NextDueAt: p.NextDueAt, Leased: p.Leased, SSRFRefused: p.Refused, Settings: settings.RoundOf(p.Settings),
		Servers: make([]planServerJSON, 0, len(p.Servers))}
	for _, s := range p.Servers {
		out.Servers = append(out.Servers, planServerJSON{ServerID: s.ServerID, Slug: s.Slug, Status: s.Status,
			State: s.State, Reason: s.Reason, NextCheckAt: s.NextCheckAt, LastRequestedAt: s.LastRequestedAt,
			ClaimableAt: s.ClaimableAt, WouldClaim: s.WouldClaim, Why: s.Why, SSRFRefused: nonEmpty(s.Refused)})
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error { return writeDryRun(f, p) }})
}

// writeDryRun says what a dry run found: the counts, then each due server and why.
func writeDryRun(f *factory, p *probe.Plan) error {
	w := f.IO.Out
	fmt.Fprintf(w, "dry run at %s: nothing claimed\n", f.IO.Time(p.Now))
	fmt.Fprintf(w, "%d due: %d claimable, would claim %d (capacity %d = %d invocations × claim limit %d)",
		len(p.Servers), p.Claimable, p.WouldClaim, p.Capacity, p.Settings.Invocations(), p.Settings.ClaimLimit)
	if skipped := skippedText(p.Skipped); skipped != "" {
		fmt.Fprintf(w, "; skipped %s", skipped)
	}
	fmt.Fprintln(w)
	if p.Refused > 0 {
		fmt.Fprintf(w, "%d claimable server(s) the SSRF guard will refuse: their checks fail without a request%s\n",
			p.Refused, refusedHint(p))
	}
	next := "none"
	if p.NextDueAt != nil {
		next = "next at " + f.IO.Time(*p.NextDueAt)
	}
	fmt.Fprintf(w, "%d active server(s) not due yet (%s)\n", p.NotDue, next)
	fmt.Fprintf(w, "%d of them in flight under a lease: a claim takes due servers in (next check, id) order, skips those "+
		"another claim holds, and moves each to its lease's end (claim + %s), due again then if its prober dies\n",
		p.Leased, render.Duration(queries.InFlightWindow))
	if len(p.Servers) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tbl := render.NewTable(w, "SLUG", "STATE", "CLAIM", "NEXT CHECK", "CLAIMABLE AT", "WHY")
	for _, s := range p.Servers {
		claim := "-"
		if s.WouldClaim {
			claim = s.Reason
		}
		at := "never (not active)"
		if s.ClaimableAt != nil {
			at = f.IO.Time(*s.ClaimableAt)
			if !s.ClaimableAt.After(p.Now) {
				at = "now"
			}
		}
		tbl.Row(s.Slug, s.State, claim, f.IO.Time(s.NextCheckAt), at, s.Why)
	}
	return tbl.Render()
}

// refusedHint suggests --allow-private-targets only for the refusals it would lift: a metadata
// or link-local address is refused whatever the flags.
func refusedHint(p *probe.Plan) string {
	always := p.Refused - p.RefusedPrivate
	switch {
	case p.RefusedPrivate == 0:
		return " (cloud metadata or link-local addresses: no flag allows them)"
	case always == 0:
		return " (a test fleet on a private network: --allow-private-targets)"
	}
	return fmt.Sprintf(" (--allow-private-targets would allow %d of them, a test fleet on a private network; "+
		"no flag allows the other %d: cloud metadata or link-local addresses)", p.RefusedPrivate, always)
}

func skippedText(skipped map[string]int) string {
	keys := make([]string, 0, len(skipped))
	for k := range skipped {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", skipped[k], strings.ReplaceAll(k, "_", " ")))
	}
	return strings.Join(parts, ", ")
}

// nonEmpty is nil for "", else a pointer to s (a JSON null for nothing to say).
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// causesOrNone is the failed batches' causes, {} rather than null when no batch ran (advance-first).
func causesOrNone(c map[string]int) map[string]int {
	if c == nil {
		return map[string]int{}
	}
	return maps.Clone(c)
}
