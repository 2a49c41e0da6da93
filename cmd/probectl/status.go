package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/queries"
)

type statusOptions struct {
	f        *factory
	SpoolDir string
}

func newStatusCmd(f *factory) *cobra.Command {
	opts := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what is in flight: open and stale jobs, due servers, recent rounds, duplicates",
		Long: `Show the prober's state at a glance, as an operator on call wants it:

  active release   its version, when it was deployed, its fan-out, claim limit and concurrency
  due servers      how many, how many of those a round holds, and the one waiting longest
  open jobs        every job claimed and not finished, with its age, server and round; jobs
                   open past the 15-minute in-flight window are flagged stale (a probe that
                   died between its writes shows here); a job whose server waits for its
                   lease's end (where the claim put it) is in flight, as every job of a
                   healthy round is, and one whose server's next check moved anywhere else
                   is flagged advanced (its probe died between advance and finish)
  recent rounds    the last 10: jobs, runs, servers, failures, open jobs and duration, or
                   running, or dead (no heartbeat for 60 s: its process is gone)
  duplicates       pairs of jobs of one server less than 10 minutes apart, requested in the
                   last 24 h (the read-only audit of 'probectl audit duplicates')
  spool            shown when results a round could not store wait on this machine
                   (--spool-dir): 'probectl runs recover' stores them

Everything is read in one READ ONLY transaction. 'probectl serve' shows the same as a web page
and as /status.json, whose shape -o json also writes (docs/status.md).

Exit status: 0 whatever the state (status informs, it does not judge); 3 when the database
cannot be read.`,
		Example: `  probectl status
  probectl status -o json | jq '.open_jobs[] | select(.stale) | .slug'
  watch -n 30 probectl status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.SpoolDir, "spool-dir", "", "the spool to look at (default $XDG_STATE_HOME/probectl)")
	return cmd
}

func runStatus(ctx context.Context, opts *statusOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	dir, err := spoolDir(f, opts.SpoolDir)
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	rep, err := status.Read(ctx, pool, f.readAt())
	if err != nil {
		return exit.UnavailableError(err)
	}
	if rep.Spool, err = status.ReadSpool(dir); err != nil {
		return exit.UnavailableError(err)
	}
	return render.Output(f.IO.Out, format, render.View{JSON: rep, Text: func() error {
		return writeStatus(f.IO, render.StylesFor(f.IO), rep)
	}})
}

// writeStatus prints the report as titled sections, each a sentence or a table.
func writeStatus(io *render.Streams, st render.Styles, r *status.Report) error {
	w := io.Out
	p := &statusPrinter{w: w}
	statusTime := io.Time
	p.title(st, "ACTIVE RELEASE")
	if rel := r.ActiveRelease; rel != nil {
		p.linef("%s (%s), deployed %s by %s: fan-out %d, claim limit %d, concurrency %d, min spacing %s, finish %s",
			rel.Version, rel.Kind, statusTime(rel.DeployedAt), rel.DeployedBy, rel.Fanout, rel.ClaimLimit,
			rel.Concurrency, render.Duration(rel.MinSpacing.D()), rel.Finish)
		if rel.Every > 0 {
			p.linef("probectl worker starts a round every %s", render.Duration(rel.Every))
		}
	} else {
		p.linef("%s", st.Muted.Render("none"))
	}

	p.title(st, "DUE SERVERS")
	if o := r.Due.Oldest; o != nil {
		p.linef("%d due, %d held by an open job; waiting longest: %s, due for %s (since %s)",
			r.Due.Count, r.Due.Held, o.Slug, render.Duration(o.Overdue), statusTime(o.NextCheckAt))
	} else {
		p.linef("%s", st.Muted.Render("none due"))
	}

	p.title(st, "OPEN JOBS")
	stale := fmt.Sprintf("%d stale", r.StaleCount)
	if r.StaleCount > 0 {
		stale = st.Fail.Render(stale)
	}
	p.linef("%d open, %s (open past the %s in-flight window)", r.OpenCount, stale, render.Duration(status.InFlight))
	if len(r.OpenJobs) > 0 {
		tbl := render.NewTable(w, "JOB", "SERVER", "ROUND", "INVOCATION", io.TimeHeader("REQUESTED"), "AGE", "STATE")
		var anyAdvanced bool
		for _, j := range r.OpenJobs {
			state := render.Plain("open")
			if j.Leased {
				state = render.Plain("in flight")
			}
			if j.Stale {
				state = render.Styled(st.Fail, "STALE")
			}
			if j.Advanced {
				state = state.Then(render.Plain(", ")).Then(render.Styled(st.Warn, "advanced"))
				anyAdvanced = true
			}
			tbl.Row(j.JobID, j.Slug, orDash(j.RoundID), orDash(j.Invocation), statusTime(j.RequestedAt),
				render.Duration(j.Age), state)
		}
		p.table(tbl)
		if more := r.OpenCount - len(r.OpenJobs); more > 0 {
			p.linef("... and %d more (the oldest %d are listed)", more, len(r.OpenJobs))
		}
		if r.StaleCount > 0 {
			p.linef("%s", st.Muted.Render("STALE: open past the in-flight window, its probe presumed dead; the next claim closes it as abandoned."))
		}
		if anyAdvanced {
			p.linef("%s", st.Muted.Render("advanced: the server's next check already moved on, the job was never finished: its probe died between its two writes."))
		}
	}

	p.title(st, "RECENT ROUNDS")
	if len(r.RecentRounds) == 0 {
		p.linef("%s", st.Muted.Render("no rounds yet"))
	} else {
		p.linef("the last %d of %d, newest first", len(r.RecentRounds), r.RoundsTotal)
		tbl := render.NewTable(w, "ROUND", io.TimeHeader("STARTED"), "TRIGGER", "VERSION", "JOBS", "RUNS", "SERVERS",
			"FAILURES", "OPEN", "DURATION")
		var anyDegraded bool
		for _, rd := range r.RecentRounds {
			// An unfinished round is running, or dead: its heartbeat stopped. A round that lost
			// checks (jobs abandoned without a run) says so whatever its state: dead, or finished
			// later by an invocation a worker's queue retried; its round.dead stands.
			duration := render.Plain(rd.State)
			if d := rd.Duration(); d != nil {
				duration = render.Plain(render.Duration(*d))
			} else if rd.State == queries.RoundDead {
				duration = render.Styled(st.Fail, rd.State)
			}
			switch {
			case rd.Lost == 1:
				duration = duration.Then(render.Styled(st.Fail, ", 1 check lost"))
			case rd.Lost > 1:
				duration = duration.Then(render.Styled(st.Fail, fmt.Sprintf(", %d checks lost", rd.Lost)))
			}
			servers := render.Plain(fmt.Sprint(rd.Servers))
			if rd.Servers < rd.Jobs {
				servers = render.Styled(st.Warn, fmt.Sprint(rd.Servers))
			}
			failures := render.Plain(fmt.Sprint(rd.Failures))
			if rd.Degraded != nil {
				failures = failures.Then(render.Plain(", ")).Then(render.Styled(st.Warn, "degraded"))
				anyDegraded = true
			}
			tbl.Row(rd.ID, statusTime(rd.StartedAt), rd.Trigger, rd.Version, rd.Jobs, rd.Runs, servers, failures,
				rd.OpenJobs, duration)
		}
		p.table(tbl)
		if anyDegraded {
			p.linef("%s", st.Muted.Render(degradedNote))
		}
	}

	d := r.Duplicates
	p.title(st, "DUPLICATE CLAIMS IN THE LAST 24 H")
	if d.Pairs() == 0 {
		p.linef("%s", st.Muted.Render(fmt.Sprintf("none: no server has two jobs within %s", render.Duration(d.Window))))
	} else {
		unexplained := fmt.Sprintf("%d unexplained", d.Unexplained())
		if d.Unexplained() > 0 {
			unexplained = st.Fail.Render(unexplained)
		}
		pairs := "pairs"
		if d.Pairs() == 1 {
			pairs = "pair"
		}
		p.linef("%d %s of jobs of one server within %s, %s", d.Pairs(), pairs, render.Duration(d.Window), unexplained)
		tbl := render.NewTable(w, "SERVER", "CLASS", "FIRST JOB", "SECOND JOB", io.TimeHeader("SECOND REQUESTED"),
			"REQUEST GAP", "AFTER FIRST FINISHED")
		for _, pair := range d.Report.Pairs {
			after := "-"
			if pair.GapAfterFinish != nil {
				after = render.Duration(*pair.GapAfterFinish)
			}
			tbl.Row(pair.Slug, string(pair.Class), pair.FirstJobID, pair.SecondJobID,
				io.TimeNano(pair.SecondRequestedAt), render.Duration(pair.RequestGap), after)
		}
		p.table(tbl)
	}
	writeWorkers(p, io, st, r)
	if sp := r.Spool; sp != nil {
		p.title(st, "SPOOL")
		if sp.Files > 0 {
			p.linef("%s", st.Fail.Render(fmt.Sprintf("%d result(s) in %d file(s) in %s could not be stored: "+
				"'probectl runs recover' (or the next run round) stores them", sp.Results, sp.Files, sp.Dir)))
		}
		if sp.SetAside > 0 {
			p.linef("%s", st.Warn.Render(fmt.Sprintf("%d file(s) set aside in %s (*.bad: spool files and failover journals): "+
				"they hold what no replay can store; read them, then remove them", sp.SetAside, sp.Dir)))
		}
	}
	writeOpenAlerts(p, io, st, r) // alerts (cmd/probectl/alerts_status.go)
	p.title(st, "")
	p.linef("%s", st.Muted.Render("as of "+statusTime(r.GeneratedAt)))
	if r.Standby != nil {
		p.linef("%s", st.Muted.Render("read on a hot standby, "+render.Duration(r.Standby.ReplayLag)+" behind its primary"))
	}
	return p.err
}

// degradedNote says what a degraded round is, wherever one is shown (status, run round, runs).
const degradedNote = "degraded: the storm guard judged the round degraded (too many of its checks failed at once); " +
	"its failures counted toward no server's down threshold (docs/alerts.md)"

// statusPrinter writes lines and tables and keeps the first error, so writeStatus reads as the report
// it prints.
type statusPrinter struct {
	w       io.Writer
	started bool
	err     error
}

func (p *statusPrinter) title(st render.Styles, s string) {
	if p.started {
		p.linef("")
	}
	p.started = true
	if s != "" {
		p.linef("%s", st.Title.Render(s))
	}
}

func (p *statusPrinter) linef(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *statusPrinter) table(t *render.Table) {
	if p.err == nil {
		p.err = t.Render()
	}
}
