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
		Use:   "recheck SLUG",
		Short: "Record a maintainer's claim: check the server again at once",
		Long: `Record that a maintainer claimed the server: it becomes due now, and the next round's job for
it carries the reason maintainer_claim. Such an explicit re-check passes the spacing guard, and
audits count it as explained rather than as a duplicate claim.`,
		Example: `  probectl servers recheck weather`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServersRecheck(cmd.Context(), f, args[0])
		},
	}
}

func runServersRecheck(ctx context.Context, f *factory, slug string) error {
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	s, err := directory.Recheck(ctx, pool, slug, nil)
	if err != nil {
		return err
	}
	if format == "json" {
		return render.JSON(f.IO.Out, toServerJSON(s))
	}
	_, err = fmt.Fprintf(f.IO.Out, "server %s is due now; its next job will be a maintainer_claim\n", s.Slug)
	return err
}
