package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/render"
)

func newServersRecheckCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "recheck SLUG...",
		Short: "Record a maintainer's claim: check servers again at once",
		Long: fmt.Sprintf(`Record that a maintainer claimed each server named: it becomes due now, and the next round's job
for it carries the reason maintainer_claim. Such an explicit re-check passes the spacing guard,
and audits count it as explained rather than as a duplicate claim.

All or none, in one transaction: a slug that is not in the directory is named, nothing is
changed, and probectl exits 2. At most %d slugs at once. With -o json, one slug prints the
server as an object, several print an array of them.`, directory.MaxRecheck),
		Example: `  probectl servers recheck weather
  probectl servers recheck weather status-page weather-eu`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServersRecheck(cmd.Context(), f, args)
		},
	}
}

func runServersRecheck(ctx context.Context, f *factory, slugs []string) error {
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if err := directory.CheckRecheck(slugs); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	servers, err := directory.Recheck(ctx, pool, slugs, nil)
	if err != nil {
		return err
	}
	// One slug keeps the shape it always had (an object); several are an array.
	var out any = toServersJSON(servers)
	if len(slugs) == 1 {
		out = toServerJSON(servers[0])
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		for _, s := range servers {
			if _, err := fmt.Fprintf(f.IO.Out, "server %s is due now; its next job will be a maintainer_claim\n", s.Slug); err != nil {
				return err
			}
		}
		return nil
	}})
}
