package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/retention"
)

type runsPruneOptions struct {
	f             *factory
	Before        string
	DryRun        bool
	WithoutExport bool
}

func newRunsPruneCmd(f *factory) *cobra.Command {
	opts := &runsPruneOptions{f: f}
	cmd := &cobra.Command{
		Use:   "prune --before DATE [--dry-run] [--without-export]",
		Short: "Drop the partitions of runs and jobs wholly before a day, once an export holds them",
		Long: `Drop the partitions of probe_runs and probe_jobs that lie wholly before DATE (YYYY-MM-DD, UTC),
oldest first: each is detached, then dropped. No row is ever deleted one by one. A partition is
dropped only when a recorded export ('probectl runs export') covers it: the export's range holds
the partition's and no run in it is newer than the export's newest; others are listed as kept.
--without-export drops them anyway (their runs are then gone for good).

It refuses (exit 2, naming why, changing nothing) a DATE inside the last 2 days, or later than an
open job's request. PostgreSQL does not detach concurrently while a default partition exists, so
each detach and drop waits at most 30 ms for its lock and tries again after a growing pause (20 ms
doubling to 400 ms), at most 30 times: a finish waits no longer than one try behind it. A prune
that cannot get a lock in that time (a long transaction or a vacuum holding a partition) stops
with exit 3, naming the partition; what it dropped stays dropped, and a later prune goes on. The rollups (servers show, the /servers pages: uptime over 30 days, per-day
counts) do not read the runs, and stay whole. 'runs show' of a pruned run says which archive
holds it; 'audit duplicates' and 'deploy verify' refuse a window reaching before what is kept.

-o json prints {"partitions": [{"from", "to", "jobs_partition", "runs_partition", "runs",
"export_id", "kept", "kept_why"}], "dry_run"}; runs is the planner's estimate of the partition's
runs, kept_why is present when a run was stored after its export.`,
		Example: `  probectl runs export --before 2026-09-01 --out runs-before-2026-09-01.jsonl.gz
  probectl runs prune --before 2026-09-01 --dry-run
  probectl runs prune --before 2026-09-01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunsPrune(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Before, "before", "", "drop the partitions wholly before this day (YYYY-MM-DD, UTC; required)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would be dropped, and drop nothing")
	cmd.Flags().BoolVar(&opts.WithoutExport, "without-export", false, "drop partitions no recorded export covers (their runs are lost)")
	return cmd
}

func runRunsPrune(ctx context.Context, opts *runsPruneOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Before == "" {
		return exit.UsageError(errors.New("--before: required (a day, YYYY-MM-DD)"))
	}
	before, err := parseDay("before", opts.Before)
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	pruned, err := retention.Prune(ctx, pool, retention.Request{Before: before, Now: f.now(), DryRun: opts.DryRun,
		WithoutExport: opts.WithoutExport})
	var refused *retention.RefusedError
	if errors.As(err, &refused) {
		return exit.UsageError(fmt.Errorf("--before: %w", err))
	}
	var locked *retention.LockError
	if errors.As(err, &locked) {
		return exit.UnavailableError(err)
	}
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: map[string]any{"partitions": pruned, "dry_run": opts.DryRun},
		Text: func() error { return writePruned(f.IO.Out, pruned, opts) }})
}

// writePruned lists the partitions a prune dropped, kept, or would drop.
func writePruned(w io.Writer, pruned []retention.Pruned, opts *runsPruneOptions) error {
	if len(pruned) == 0 {
		_, err := fmt.Fprintf(w, "no partition lies wholly before %s; nothing to drop\n", opts.Before)
		return err
	}
	tbl := render.NewTable(w, "RUNS PARTITION", "FROM", "TO", "RUNS (ESTIMATE)", "EXPORT", "ACTION")
	dropped := 0
	for _, p := range pruned {
		action, export := "dropped", orDash(p.ExportID)
		switch {
		case p.Kept && p.KeptWhy != "":
			action = "kept: a run was stored after its export"
		case p.Kept:
			action = "kept: no export covers it"
		case opts.DryRun:
			action = "would drop"
			dropped++
		default:
			dropped++
		}
		tbl.Row(p.RunsTable, timeOrDash(p.From), p.To.UTC().Format(time.RFC3339), p.Runs, export, action)
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	verb := "dropped"
	if opts.DryRun {
		verb = "would drop" // nothing was: a dry run
	}
	_, err := fmt.Fprintf(w, "%s %d of %d range(s)\n", verb, dropped, len(pruned))
	return err
}
