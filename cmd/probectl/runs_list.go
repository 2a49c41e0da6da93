package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

type runsListOptions struct {
	f       *factory
	Server  string
	Round   int64
	Outcome string
	Since   string
	Limit   int
	// roundSet: --round was given (0 is then refused, not taken for "every round").
	roundSet bool
}

func newRunsListCmd(f *factory) *cobra.Command {
	opts := &runsListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Long: fmt.Sprintf(`List stored runs, newest first, with their outcome and why. --outcome is the run's own
outcome (ok, failed or error; a list); a job abandoned without a run has no run to list.
A run marked probectl_fault (interrupted, fenced or stored late by probectl) says nothing about
the server and is left out of its uptime. --limit is at most %d.`, history.MaxListLimit),
		Example: `  probectl runs list
  probectl runs list --server weather --since 24h
  probectl runs list --round 42 --outcome failed,error
  probectl runs list --outcome error -o csv > errors.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.roundSet = cmd.Flags().Changed("round")
			return runRunsList(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Server, "server", "", "only the runs of the server with this slug")
	fl.Int64Var(&opts.Round, "round", 0, "only the runs of this round (a round id; leave it out for every round)")
	fl.StringVar(&opts.Outcome, "outcome", "", "only runs with these outcomes, comma-separated: ok, failed, error")
	fl.StringVar(&opts.Since, "since", "", "only runs started from then on: RFC 3339 or a duration back from now (24h, 7d)")
	fl.IntVar(&opts.Limit, "limit", 50, fmt.Sprintf("at most this many runs (1..%d)", history.MaxListLimit))
	return cmd
}

// parseRunFilter reads the flags of 'runs list' into a filter; bad input names the flag.
func parseRunFilter(opts *runsListOptions, now time.Time) (queries.RunFilter, error) {
	rf := queries.RunFilter{Server: opts.Server, Limit: opts.Limit}
	if opts.Limit < 1 || opts.Limit > history.MaxListLimit {
		return rf, exit.UsageError(fmt.Errorf("--limit: must be between 1 and %d, got %d", history.MaxListLimit, opts.Limit))
	}
	if opts.Round < 0 || (opts.roundSet && opts.Round == 0) {
		return rf, exit.UsageError(fmt.Errorf("--round: must be a round id (1 or more), got %d; leave --round out to list the runs of every round", opts.Round))
	}
	if opts.Round > 0 {
		rf.RoundID = &opts.Round
	}
	if opts.Outcome != "" {
		for _, o := range strings.Split(opts.Outcome, ",") {
			o = strings.TrimSpace(o)
			if !slices.Contains(history.Outcomes, o) {
				return rf, exit.UsageError(fmt.Errorf("--outcome: %q is not an outcome (want %s)", o, strings.Join(history.Outcomes, ", ")))
			}
			rf.Outcomes = append(rf.Outcomes, o)
		}
	}
	if opts.Since != "" {
		t, err := parseTimeFlag("since", opts.Since, now)
		if err != nil {
			return rf, err
		}
		rf.Since = &t
	}
	return rf, nil
}

func runRunsList(ctx context.Context, opts *runsListOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json", "csv")
	if err != nil {
		return err
	}
	rf, err := parseRunFilter(opts, f.now())
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	runs, err := history.ListRuns(ctx, pool, rf)
	if errors.Is(err, queries.ErrNoServer) {
		return exit.UsageError(fmt.Errorf("--server %q: no such server; 'probectl servers list' shows them", opts.Server))
	}
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: toRunsJSON(runs),
		Text: func() error { return writeRunsTable(f.IO, runs) },
		CSV:  func() error { return writeRunsCSV(f.IO.Out, runs) }})
}

// writeRunsTable lists runs, their start in the zone --tz chose (named in the heading).
func writeRunsTable(io *render.Streams, runs []queries.Run) error {
	tbl := render.NewTable(io.Out, "ID", "SERVER", "OUTCOME", io.TimeHeader("STARTED"), "DURATION", "ROUND", "WHY")
	for _, r := range runs {
		why := runWhy(r)
		if r.ProbectlFault {
			why += " (probectl's fault)"
		}
		if r.RoundDegraded && r.Outcome != "ok" {
			why += " (degraded round: counted toward no threshold)"
		}
		tbl.Row(r.ID, r.Server, r.Outcome, io.Time(r.StartedAt), render.Duration(r.Duration()), idText(r.RoundID), why)
	}
	return tbl.Render()
}

// runsCSVHeader names the columns as the JSON keys of a run are named.
var runsCSVHeader = []string{"id", "job_id", "round_id", "server", "kind", "outcome", "summary", "error", "requests",
	"started_at", "finished_at", "duration_seconds", "key_id", "probectl_fault"}

func writeRunsCSV(w io.Writer, runs []queries.Run) error {
	cw := render.NewCSV(w)
	cw.Write(runsCSVHeader...)
	for _, r := range runs {
		round, msg, key := "", "", ""
		if r.RoundID != nil {
			round = strconv.FormatInt(*r.RoundID, 10)
		}
		if r.Error != nil {
			msg = *r.Error
		}
		if r.KeyID != nil {
			key = *r.KeyID
		}
		cw.Write(strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.JobID, 10), round, r.Server, r.Kind,
			r.Outcome, r.Summary, msg, strconv.Itoa(r.Requests), r.StartedAt.Format(time.RFC3339Nano),
			r.FinishedAt.Format(time.RFC3339Nano), strconv.FormatFloat(r.Duration().Seconds(), 'f', -1, 64), key,
			strconv.FormatBool(r.ProbectlFault))
	}
	return cw.Flush()
}
