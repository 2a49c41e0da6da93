package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/render"
)

type auditDuplicatesOptions struct {
	f *factory
	auditRange
	Window      time.Duration
	SplitAt     []string
	FailOnFound bool
}

func newAuditDuplicatesCmd(f *factory) *cobra.Command {
	opts := &auditDuplicatesOptions{f: f}
	cmd := &cobra.Command{
		Use:   "duplicates [--since T] [--until T] [--window D] [--split-at T]...",
		Short: "Find servers claimed twice within the window (default 10m)",
		Long: `Find duplicate claims: jobs requested less than --window after the previous job for the same
server. The population is every job requested in [--since, --until); the previous job may lie
before --since and still counts. Exactly --window apart is not a duplicate.

Each pair is shown with both jobs, the first job's finish, the gap between the two requests and
the gap from the first job's finish to the second request, and a class:

  after_finish  the second was claimed after the first finished (the incident's class)
  overlap       the second was claimed before the first finished (a negative gap)
  open          the first job never finished
  explained     the second job is an explicit re-check (reason maintainer_claim or manual)
  failover      the database failed over between the two: a claim vanished with an
                asynchronous standby's promotion, was restored from a spool or journal, and
                its server looked due on the new primary (explained; JSON gives failover_at,
                when the new timeline was first seen)

Also reported: the closest two jobs of one server, duplicate or not, and with --split-at (repeatable)
the jobs, servers and pairs of each period. --fail-on-found exits 1 when any pair is unexplained,
after printing the report. -o csv prints the pairs alone.`,
		Example: `  # did anything get checked twice in the last day?
  probectl audit duplicates --since 24h

  # before / while the fan-out was live / after the fix, in one command
  probectl audit duplicates --since 2026-09-30T20:53:00Z --until 2026-10-08T13:15:31Z \
      --split-at 2026-10-07T20:53:00Z --split-at 2026-10-07T22:13:24Z

  # a CI gate or an alert
  probectl audit duplicates --since 1h --fail-on-found -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditDuplicates(cmd.Context(), opts)
		},
	}
	opts.addFlags(cmd)
	durationVar(cmd.Flags(), &opts.Window, "window", 10*time.Minute, "a job requested less than this after the previous one of its server is a duplicate")
	cmd.Flags().StringArrayVar(&opts.SplitAt, "split-at", nil, "cut the population into periods at this time (repeatable)")
	cmd.Flags().BoolVar(&opts.FailOnFound, "fail-on-found", false, "exit 1 when any pair is unexplained")
	return cmd
}

func runAuditDuplicates(ctx context.Context, opts *auditDuplicatesOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json", "csv")
	if err != nil {
		return err
	}
	p, err := opts.params(f.now())
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	r, err := audit.Duplicates(ctx, pool, p)
	if err != nil {
		return auditError(err)
	}
	err = render.Output(f.IO.Out, format, render.View{JSON: r,
		Text: func() error { return writeDuplicatesTable(f.IO, r) },
		CSV:  func() error { return writeDuplicatesCSV(f.IO.Out, r) }})
	return failIfFound(err, opts.FailOnFound && r.Unexplained() > 0)
}

func (opts *auditDuplicatesOptions) params(now time.Time) (audit.DuplicatesParams, error) {
	var p audit.DuplicatesParams
	var err error
	if p.Since, p.Until, err = opts.parse(now); err != nil {
		return p, err
	}
	if p.Window, err = opts.Window, mustBePositive("window", opts.Window); err != nil {
		return p, err
	}
	for _, s := range opts.SplitAt {
		t, err := parseTimeFlag("split-at", s, now)
		if err != nil {
			return p, err
		}
		p.SplitAt = append(p.SplitAt, t)
	}
	return p, nil
}

// writeDuplicatesTable prints the report the way the incident write-up reads: the population and
// the verdict first, then the periods, then one line per pair with the gap after the first
// job finished.
func writeDuplicatesTable(io *render.Streams, r *audit.DuplicatesReport) error {
	st := render.StylesFor(io)
	w := io.Out
	pop := r.Population
	verdict := st.Pass.Render(strconv.Itoa(len(r.Pairs)))
	if r.Unexplained() > 0 {
		verdict = st.Fail.Render(strconv.Itoa(len(r.Pairs)))
	}
	var classes []string
	for _, c := range audit.Classes {
		classes = append(classes, fmt.Sprintf("%s %d", c, r.Count(c)))
	}
	fmt.Fprintf(w, "%s\n", st.Title.Render(fmt.Sprintf("Duplicate claims: a job requested less than %s after the previous job for the same server", render.Duration(r.Window))))
	fmt.Fprintf(w, "population  %d jobs for %d servers, requested from %s to %s\n", pop.Jobs, pop.Servers,
		io.TimeMillis(pop.Since), io.TimeMillis(pop.Until))
	fmt.Fprintf(w, "duplicates  %s (%d unexplained: %s)\n", verdict, r.Unexplained(), strings.Join(classes, ", "))
	if c := r.Closest; c != nil {
		fmt.Fprintf(w, "closest     %s apart: server %s, jobs %d and %d, at %s\n", render.Duration(c.Gap),
			c.Slug, c.FirstJobID, c.SecondJobID, io.TimeMillis(c.SecondRequestedAt))
	} else {
		fmt.Fprintln(w, "closest     no server has two jobs to compare")
	}
	if len(r.Periods) > 1 {
		fmt.Fprintln(w)
		tbl := render.NewTable(w, io.TimeHeader("PERIOD"), "JOBS", "SERVERS", "PAIRS", "UNEXPLAINED")
		for _, p := range r.Periods {
			tbl.Row(io.TimeMillis(p.Since)+" to "+io.TimeMillis(p.Until), p.Jobs, p.Servers, p.Pairs, p.Unexplained)
		}
		if err := tbl.Render(); err != nil {
			return err
		}
	}
	if len(r.Pairs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tbl := render.NewTable(w, "SERVER", "FIRST JOB", "SECOND JOB", "FIRST REQUESTED", "FIRST FINISHED",
		"SECOND REQUESTED", "REQUEST GAP", "AFTER FINISH", "CLASS")
	for _, p := range r.Pairs {
		first := strconv.FormatInt(p.FirstJobID, 10)
		if p.FirstBeforeSince {
			first += " (before --since)"
		}
		label := string(p.Class)
		if p.FailoverAt != nil {
			label += " (new timeline seen " + io.TimeMillis(*p.FailoverAt) + ")"
		}
		class := render.Plain(label)
		if !p.Explained() {
			class = render.Styled(st.Fail, label)
		}
		tbl.Row(p.Slug, first, p.SecondJobID, io.TimeMillis(p.FirstRequestedAt), millisOr(io, p.FirstFinishedAt, "open"),
			io.TimeMillis(p.SecondRequestedAt), render.Duration(p.RequestGap), durationOr(p.GapAfterFinish, "-"), class)
	}
	return tbl.Render()
}

// duplicatesCSVHeader names the columns as the JSON keys of a pair are named.
var duplicatesCSVHeader = []string{"server_id", "slug", "first_job_id", "second_job_id", "first_requested_at",
	"first_finished_at", "second_requested_at", "request_gap_seconds", "gap_after_finish_seconds",
	"second_reason", "class", "explained", "first_before_since"}

func writeDuplicatesCSV(w io.Writer, r *audit.DuplicatesReport) error {
	cw := render.NewCSV(w)
	cw.Write(duplicatesCSVHeader...)
	for _, p := range r.Pairs {
		finished, afterFinish := "", ""
		if p.FirstFinishedAt != nil {
			finished = p.FirstFinishedAt.UTC().Format(time.RFC3339Nano)
		}
		if p.GapAfterFinish != nil {
			afterFinish = audit.FormatSeconds(*p.GapAfterFinish)
		}
		cw.Write(strconv.FormatInt(p.ServerID, 10), p.Slug, strconv.FormatInt(p.FirstJobID, 10),
			strconv.FormatInt(p.SecondJobID, 10), p.FirstRequestedAt.UTC().Format(time.RFC3339Nano), finished,
			p.SecondRequestedAt.UTC().Format(time.RFC3339Nano), audit.FormatSeconds(p.RequestGap), afterFinish,
			p.SecondReason, string(p.Class), strconv.FormatBool(p.Explained()), strconv.FormatBool(p.FirstBeforeSince))
	}
	return cw.Flush()
}
