package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/render"
)

type auditRateOptions struct {
	f *factory
	auditRange
	FailOnFound bool
}

func newAuditRateCmd(f *factory) *cobra.Command {
	opts := &auditRateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "rate [--since T] [--until T]",
		Short: "Check the promise to operators: one round of at most 8 requests per check interval",
		Long: `Check the promise the directory makes to the operators of the servers it probes: at most one
round of at most 8 requests per check interval (12h on the standard plan, 15m on the frequent
one).

For every server with a round (job) requested in [--since, --until) it counts the rounds, the
requests its runs made and the most one run made, against what the promise allows over the
window, and lists the servers over it: a scheduled round requested less than the check interval
after the previous one (which may lie before --since), or a run of more than 8 requests. Explicit
re-checks (maintainer_claim, manual) are counted but never held against the promise.
--fail-on-found exits 1 when any server is over, after printing the report.`,
		Example: `  probectl audit rate --since 24h
  probectl audit rate --since 7d --fail-on-found -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditRate(cmd.Context(), opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().BoolVar(&opts.FailOnFound, "fail-on-found", false, "exit 1 when any server got more than promised")
	return cmd
}

func runAuditRate(ctx context.Context, opts *auditRateOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json", "csv")
	if err != nil {
		return err
	}
	since, until, err := opts.parse(f.now())
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	r, err := audit.Rate(ctx, pool, audit.RateParams{Since: since, Until: until})
	if err != nil {
		return auditError(err)
	}
	err = render.Output(f.IO.Out, format, render.View{JSON: r,
		Text: func() error { return writeRateTable(f.IO, r) },
		CSV:  func() error { return writeRateCSV(f.IO.Out, r) }})
	return failIfFound(err, opts.FailOnFound && len(r.Over) > 0)
}

func writeRateTable(io *render.Streams, r *audit.RateReport) error {
	st := render.StylesFor(io)
	w := io.Out
	over := st.Pass.Render("0")
	if len(r.Over) > 0 {
		over = st.Fail.Render(strconv.Itoa(len(r.Over)))
	}
	fmt.Fprintf(w, "%s\n", st.Title.Render(fmt.Sprintf("The promise: at most one round of at most %d requests per check interval", audit.MaxRequestsPerRound)))
	fmt.Fprintf(w, "window      %s to %s\n", io.TimeMillis(r.Since), io.TimeMillis(r.Until))
	fmt.Fprintf(w, "checked     %d jobs and %d requests for %d servers\n", r.Rounds, r.Requests, r.Servers)
	fmt.Fprintf(w, "over        %s of %d servers\n", over, r.Servers)
	if len(r.Over) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tbl := render.NewTable(w, "SERVER", "PLAN", "INTERVAL", "JOBS/ALLOWED", "RECHECKS", "REQUESTS/ALLOWED",
		"MOST IN A JOB", "SHORT GAPS", "CLOSEST GAP")
	for _, s := range r.Over {
		tbl.Row(s.Slug, s.Plan, render.Duration(s.CheckInterval), fmt.Sprintf("%d/%d", s.Rounds, s.AllowedRounds), s.Rechecks,
			fmt.Sprintf("%d/%d", s.Requests, s.AllowedRequests()), s.MaxRequests, s.ShortGaps, durationOr(s.ClosestGap, "-"))
	}
	return tbl.Render()
}

func writeRateCSV(w io.Writer, r *audit.RateReport) error {
	cw := render.NewCSV(w)
	cw.Write("server_id", "slug", "plan", "check_interval_seconds", "rounds", "allowed_rounds",
		"rechecks", "requests", "allowed_requests", "max_requests_per_round", "short_gaps", "closest_gap_seconds")
	for _, s := range r.Over {
		closest := ""
		if s.ClosestGap != nil {
			closest = audit.FormatSeconds(*s.ClosestGap)
		}
		cw.Write(strconv.FormatInt(s.ServerID, 10), s.Slug, s.Plan, audit.FormatSeconds(s.CheckInterval),
			strconv.FormatInt(s.Rounds, 10), strconv.FormatInt(s.AllowedRounds, 10), strconv.FormatInt(s.Rechecks, 10),
			strconv.FormatInt(s.Requests, 10), strconv.FormatInt(s.AllowedRequests(), 10), strconv.Itoa(s.MaxRequests),
			strconv.FormatInt(s.ShortGaps, 10), closest)
	}
	return cw.Flush()
}
