package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/schema"
)

func newMigrateStatusCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show which schema migrations are applied",
		Long: `List every migration this probectl ships and whether the database has it, with when it was
applied ("-" where the database did not record it; -o json leaves applied_at out then).`,
		Example: `  probectl migrate status
  probectl migrate status -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMigrateStatus(cmd.Context(), f)
		},
	}
}

func runMigrateStatus(ctx context.Context, f *factory) error {
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.RawPool(ctx)
	if err != nil {
		return err
	}
	st, err := schema.Status(ctx, pool)
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: map[string]any{"migrations": st}, Text: func() error {
		tbl := render.NewTable(f.IO.Out, "VERSION", "MIGRATION", "STATE", "APPLIED AT")
		for _, m := range st {
			state, at := "pending", "-"
			if m.Applied {
				state = "applied"
			}
			if m.Applied && !m.AppliedAt.IsZero() { // "-": applied, but not recorded when
				at = m.AppliedAt.Format(time.RFC3339)
			}
			tbl.Row(m.Version, m.Name, state, at)
		}
		return tbl.Render()
	}})
}
