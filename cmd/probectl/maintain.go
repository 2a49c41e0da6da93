package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/schema"
	"github.com/probectl/probectl/queries"
)

type maintainOptions struct {
	f      *factory
	From   string
	DryRun bool
}

func newMaintainCmd(f *factory) *cobra.Command {
	opts := &maintainOptions{f: f}
	cmd := &cobra.Command{
		Use:   "maintain [--dry-run] [--from DATE]",
		Short: "Make the partitions of runs and jobs a week ahead",
		Long: `Make the partitions of probe_jobs and probe_runs (one a day, or a week: 'runs retention')
from today up to 7 days ahead, and print each one it made. Rows that were stored in a default
partition because their day had no partition yet (maintenance missed) are moved into the
partition made for their day. It is idempotent: run it from cron, as often as you like; 'migrate'
and the worker's daily job run it too (docs/retention.md).

--from DATE (YYYY-MM-DD, UTC, not after today and at most 10 years back) makes the partitions
back to that day as well, before restoring runs from an archive. --dry-run says what it would make and changes nothing.

A range a prune dropped is not made again: it is listed as pruned, and 'runs show' of its runs
still names the archive that holds them.

-o json prints {"partitions": [{"parent", "table", "from", "to", "moved_rows", "pruned_at",
"export_id"}], "dry_run"} (pruned_at and export_id only for a pruned range).`,
		Example: `  probectl maintain
  probectl maintain --dry-run
  probectl maintain --from 2026-09-01   # before a restore`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMaintain(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "make the partitions back to this day too (YYYY-MM-DD, UTC)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would be made, and make nothing")
	return cmd
}

// parseDay reads a YYYY-MM-DD flag as the start of that UTC day.
func parseDay(flag, v string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, exit.UsageError(fmt.Errorf("--%s %q: want a day as YYYY-MM-DD (UTC)", flag, v))
	}
	return t.UTC(), nil
}

// MaxMaintainBack bounds how far back --from makes partitions: two a day (runs and jobs), so
// ten years is some 7,300 tables, each a catalog entry every plan that reads the parents loads.
const MaxMaintainBack = 10 * 366 * 24 * time.Hour

// fromInBounds refuses a --from after today (the days from today on are made anyway: a later day
// was taken for today, silently) or more than MaxMaintainBack before it (1900-01-01 asked for
// 92,714 partitions).
func fromInBounds(from, now time.Time) error {
	today := now.UTC().Truncate(24 * time.Hour)
	switch {
	case from.After(today):
		return exit.UsageError(fmt.Errorf("--from %s: after today (%s); the partitions from today to 7 days ahead are made without it",
			from.Format(time.DateOnly), today.Format(time.DateOnly)))
	case from.Before(today.Add(-MaxMaintainBack)):
		return exit.UsageError(fmt.Errorf("--from %s: at most 10 years back (%s), two partitions a day",
			from.Format(time.DateOnly), today.Add(-MaxMaintainBack).Format(time.DateOnly)))
	}
	return nil
}

func runMaintain(ctx context.Context, opts *maintainOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	var from time.Time
	if opts.From != "" {
		if from, err = parseDay("from", opts.From); err != nil {
			return err
		}
		if err := fromInBounds(from, f.now()); err != nil {
			return err
		}
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	made, err := schema.Maintain(ctx, pool, f.now(), from, opts.DryRun)
	if err != nil {
		return err
	}
	if made == nil {
		made = []queries.Partition{} // [] for a script, not null, when there is nothing to do
	}
	return render.Output(f.IO.Out, format, render.View{JSON: map[string]any{"partitions": made, "dry_run": opts.DryRun},
		Text: func() error { return renderPartitions(f.IO.Out, made, opts.DryRun) }})
}

// renderPartitions prints the partitions maintenance made, or would make, and the pruned ranges
// it passed over (not made again: the record of the prune stands).
func renderPartitions(w io.Writer, made []queries.Partition, dryRun bool) error {
	verb := "made"
	if dryRun {
		verb = "would make"
	}
	n := queries.MadeCount(made)
	pruned := len(made) - n
	if len(made) == 0 {
		_, err := fmt.Fprintln(w, "partitions are made 7 days ahead already; nothing to do")
		return err
	}
	tbl := render.NewTable(w, "PARTITION", "FROM", "TO", "MOVED ROWS")
	for _, p := range made {
		moved := fmt.Sprint(p.MovedRows)
		if p.PrunedAt != nil {
			moved = "pruned " + p.PrunedAt.UTC().Format(time.RFC3339) + ": not made again"
		}
		tbl.Row(p.Table, p.RangeFrom.UTC().Format(time.RFC3339), p.RangeTo.UTC().Format(time.RFC3339), moved)
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s %d partition(s)", verb, n)
	if err == nil && pruned > 0 {
		_, err = fmt.Fprintf(w, "; %d pruned partition(s) left pruned ('runs show' names their archives)", pruned)
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}
