package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/render"
)

type auditOpenOptions struct {
	f           *factory
	InFlight    time.Duration
	FailOnFound bool
}

func newAuditOpenCmd(f *factory) *cobra.Command {
	opts := &auditOpenOptions{f: f}
	cmd := &cobra.Command{
		Use:   "open [--in-flight D]",
		Short: "List open jobs with their age, server and round; flag the stale ones",
		Long: `List every job that has no finish time, oldest first, with its age, its server and its round.
A job open for at least the in-flight window (15m) is stale: the probe that claimed it died
between claim and finish. No other process checks that server until the next claim closes the
job as abandoned. --fail-on-found exits 1 when any job is stale, after printing the list.`,
		Example: `  probectl audit open
  probectl audit open --fail-on-found -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditOpen(cmd.Context(), opts)
		},
	}
	durationVar(cmd.Flags(), &opts.InFlight, "in-flight", 15*time.Minute, "how long a job may stay open before it is stale")
	cmd.Flags().BoolVar(&opts.FailOnFound, "fail-on-found", false, "exit 1 when any open job is stale")
	return cmd
}

func runAuditOpen(ctx context.Context, opts *auditOpenOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json", "csv")
	if err != nil {
		return err
	}
	if err := mustBePositive("in-flight", opts.InFlight); err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	r, err := audit.Open(ctx, pool, audit.OpenParams{InFlight: opts.InFlight})
	if err != nil {
		return auditError(err)
	}
	err = render.Output(f.IO.Out, format, render.View{JSON: r,
		Text: func() error { return writeOpenTable(f.IO, r) },
		CSV:  func() error { return writeOpenCSV(f.IO.Out, r) }})
	return failIfFound(err, opts.FailOnFound && r.Stale() > 0)
}

func writeOpenTable(io *render.Streams, r *audit.OpenReport) error {
	st := render.StylesFor(io)
	w := io.Out
	stale := st.Pass.Render("0")
	if r.Stale() > 0 {
		stale = st.Fail.Render(strconv.Itoa(r.Stale()))
	}
	fmt.Fprintf(w, "open jobs   %d, as of %s\n", len(r.Jobs), io.TimeMillis(r.Now))
	fmt.Fprintf(w, "stale       %s (open for %s or more)\n", stale, render.Duration(r.InFlight))
	if len(r.Jobs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tbl := render.NewTable(w, "JOB", "SERVER", "ROUND", "INVOCATION", "REASON", "REQUESTED", "AGE", "STATE")
	for _, j := range r.Jobs {
		state := render.Styled(st.Muted, "open")
		if j.Stale {
			state = render.Styled(st.Fail, "stale")
		}
		tbl.Row(j.JobID, j.Slug, openJobRound(j), orDash(j.Invocation), j.Reason, io.TimeMillis(j.RequestedAt),
			render.Duration(j.Age), state)
	}
	return tbl.Render()
}

func openJobRound(j audit.OpenJob) string {
	if j.RoundID == nil {
		return "-"
	}
	label := strconv.FormatInt(*j.RoundID, 10)
	if j.RoundTrigger != nil && j.RoundVersion != nil {
		label += fmt.Sprintf(" (%s, %s)", *j.RoundTrigger, *j.RoundVersion)
	}
	return label
}

func orDash[T any](v *T) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func writeOpenCSV(w io.Writer, r *audit.OpenReport) error {
	cw := render.NewCSV(w)
	cw.Write("job_id", "server_id", "slug", "round_id", "invocation", "reason", "requested_at", "age_seconds", "stale")
	for _, j := range r.Jobs {
		round, invocation := "", ""
		if j.RoundID != nil {
			round = strconv.FormatInt(*j.RoundID, 10)
		}
		if j.Invocation != nil {
			invocation = strconv.Itoa(int(*j.Invocation))
		}
		cw.Write(strconv.FormatInt(j.JobID, 10), strconv.FormatInt(j.ServerID, 10), j.Slug, round,
			invocation, j.Reason, j.RequestedAt.Format(time.RFC3339Nano), audit.FormatSeconds(j.Age),
			strconv.FormatBool(j.Stale))
	}
	return cw.Flush()
}
