package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/schema"
	"github.com/probectl/probectl/queries"
)

type migrateOptions struct {
	f *factory
}

func newMigrateCmd(f *factory) *cobra.Command {
	opts := &migrateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the schema migrations this probectl ships",
		Long: `Apply every schema migration this probectl ships that the database lacks, each in its own
transaction, and print what was applied. Running it again applies nothing: it is safe to run on
every deploy, and two concurrent runs take turns on a lock.

Before applying migration 00007 (history) to a database with many runs, it says on stderr how long
its backfill may take: finishes wait for it, so stop rounds and workers first (docs/history.md).

After the migrations it makes the partitions of runs and jobs a week ahead, as 'probectl
maintain' does (docs/retention.md), and says so on stderr; -o json adds them as "partitions".`,
		Example: `  probectl migrate --database-url postgres://probectl@db.internal/probectl
  probectl migrate status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMigrate(cmd.Context(), opts)
		},
	}
	cmd.AddCommand(newMigrateStatusCmd(f))
	return cmd
}

func runMigrate(ctx context.Context, opts *migrateOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.RawPool(ctx)
	if err != nil {
		return err
	}
	notices, err := schema.Notices(ctx, pool)
	if err != nil {
		return err
	}
	for _, n := range notices {
		if _, err := fmt.Fprintf(f.IO.ErrOut, "probectl: note: %s\n", n); err != nil {
			return err
		}
	}
	applied, err := schema.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	// The partitions a week ahead, as `probectl maintain` makes them (docs/retention.md).
	made, err := schema.Maintain(ctx, pool, f.now(), time.Time{}, false)
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: map[string]any{"applied": applied, "partitions": made},
		Text: func() error { return writeMigrated(f.IO, applied, made) }})
}

// writeMigrated lists the migrations applied, and says on stderr how many partitions were made.
func writeMigrated(io *render.Streams, applied []queries.Migration, made []queries.Partition) error {
	n := queries.MadeCount(made)
	if n > 0 {
		if _, err := fmt.Fprintf(io.ErrOut, "probectl: made %d partition(s) of runs and jobs ahead\n", n); err != nil {
			return err
		}
	}
	if len(applied) == 0 {
		_, err := fmt.Fprintln(io.Out, "schema is up to date; nothing to apply")
		return err
	}
	tbl := render.NewTable(io.Out, "VERSION", "MIGRATION", "DURATION")
	for _, m := range applied {
		tbl.Row(m.Version, m.Name, render.Duration(time.Duration(m.Duration*float64(time.Second))))
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(io.Out, "applied %d migration(s)\n", len(applied))
	return err
}
