package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/check"
)

type serversListOptions struct {
	f      *factory
	Status string
}

func newServersListCmd(f *factory) *cobra.Command {
	opts := &serversListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the servers in the directory",
		Long:  "List the servers in the directory, ordered by slug, with their kind, plan, status and next check time.",
		Example: `  probectl servers list
  probectl servers list --status paused
  probectl servers list -o json | jq -r '.[] | select(.kind == "mcp") | .slug'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServersList(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Status, "status", "", "only servers with this status: active, paused or delisted")
	return cmd
}

func runServersList(ctx context.Context, opts *serversListOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if err := directory.CheckStatusFilter(opts.Status); err != nil {
		return exit.UsageError(fmt.Errorf("--%w", err))
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	servers, err := directory.List(ctx, pool, opts.Status)
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: toServersJSON(servers), Text: func() error {
		tbl := render.NewTable(f.IO.Out, "SLUG", "KIND", "TRANSPORT", "PLAN", "STATUS", "NEXT CHECK", "URL")
		for _, s := range servers {
			transport := "-"
			if s.Transport != nil {
				transport = *s.Transport
			}
			tbl.Row(s.Slug, s.Kind, transport, s.Plan, s.Status, f.IO.Time(s.NextCheckAt), check.RedactURL(s.EndpointURL))
		}
		return tbl.Render()
	}})
}
