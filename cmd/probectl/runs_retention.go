package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/queries"
)

type runsRetentionOptions struct {
	f       *factory
	Keep    time.Duration
	KeepSet bool // --keep was given, 0 included (refused as under the minimum, not taken as absent)
	Forever bool
	Unit    string
	Actor   string
}

func newRunsRetentionCmd(f *factory) *cobra.Command {
	opts := &runsRetentionOptions{f: f}
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Show how long runs are kept",
		Long: `Show the retention setting: how long runs are kept (default: for ever) and whether partitions
span a day or a week. With a time set, the daily job of 'probectl worker --archive-dir DIR'
exports the runs older than that into DIR ('runs export') and prunes the partitions the export
covers ('runs prune'); a worker without --archive-dir prunes nothing (docs/retention.md).

-o json prints {"keep_seconds" (null: for ever), "partition_unit", "updated_by", "updated_at"}.`,
		Example: `  probectl runs retention
  probectl runs retention set --keep 90d
  probectl runs retention set --forever`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunsRetention(cmd.Context(), opts, false)
		},
	}
	set := &cobra.Command{
		Use:   "set {--keep DURATION | --forever} [--unit day|week]",
		Short: "Set how long runs are kept",
		Long: `Set how long runs are kept (--keep, at least 3 days: 90d, 26w) or keep them for ever (--forever,
the default), and optionally the span of the partitions made from now on (--unit day or week;
partitions already made keep theirs). Prints the setting.`,
		Example: `  probectl runs retention set --keep 90d
  probectl runs retention set --keep 52w --unit week`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.KeepSet = cmd.Flags().Changed("keep")
			return runRunsRetention(cmd.Context(), opts, true)
		},
	}
	durationVar(set.Flags(), &opts.Keep, "keep", 0, "keep runs this long (at least 3d)")
	set.Flags().BoolVar(&opts.Forever, "forever", false, "keep runs for ever (the default)")
	set.Flags().StringVar(&opts.Unit, "unit", "", "partitions made from now on span a day or a week")
	set.Flags().StringVar(&opts.Actor, "actor", "", "who sets it, as recorded (default $USER)")
	cmd.AddCommand(set)
	return cmd
}

// retentionJSON is the documented JSON shape of 'runs retention'.
type retentionJSON struct {
	KeepSeconds *float64   `json:"keep_seconds"`
	Unit        string     `json:"partition_unit"`
	UpdatedBy   *string    `json:"updated_by"`
	UpdatedAt   *time.Time `json:"updated_at"`
}

func runRunsRetention(ctx context.Context, opts *runsRetentionOptions, set bool) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	change := retention.Change{Forever: opts.Forever, Unit: opts.Unit}
	if set {
		if opts.KeepSet {
			change.Keep = &opts.Keep
		}
		if err := retention.CheckChange(change); err != nil {
			return exit.UsageError(err)
		}
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	var r queries.Retention
	if set {
		r, err = retention.Set(ctx, pool, change, actorFrom(f, opts.Actor))
	} else {
		r, err = retention.Get(ctx, pool)
	}
	var se *retention.SettingError
	if errors.As(err, &se) {
		return exit.UsageError(err)
	}
	if err != nil {
		return err
	}
	out := retentionJSON{Unit: r.Unit, KeepSeconds: durationSeconds(r.Keep), UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}
	keepText := "for ever"
	if r.Keep != nil {
		keepText = render.Duration(*r.Keep)
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		_, err := fmt.Fprintf(f.IO.Out, "runs kept: %s; partitions: one a %s\n", keepText, r.Unit)
		return err
	}})
}
