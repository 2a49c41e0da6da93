package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/render"
)

type serversAddOptions struct {
	f      *factory
	Entry  directory.Entry
	DryRun bool
}

func newServersAddCmd(f *factory) *cobra.Command {
	opts := &serversAddOptions{f: f}
	cmd := &cobra.Command{
		Use:   "add --slug SLUG --url URL --kind mcp|http [--plan standard|frequent] [--transport streamable-http|sse]",
		Short: "Add one server (or update the one with that slug)",
		Long: `Add one server to the directory, or update the server with the same slug. A new server is
due at once. An mcp server's --transport is streamable-http unless given (a streamable-http
server that answers initialize with 400, 404 or 405 is tried over SSE too); sse is for servers
that speak only the HTTP+SSE transport of protocol 2024-11-05.`,
		Example: `  probectl servers add --slug weather --url https://weather.example/mcp --kind mcp
  probectl servers add --slug legacy --url https://legacy.example/sse --kind mcp --transport sse
  probectl servers add --slug status --url https://status.example/health --kind http --plan frequent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServersAdd(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Entry.Slug, "slug", "", "unique name of the server (a-z, 0-9, '.', '_', '-')")
	cmd.Flags().StringVar(&opts.Entry.URL, "url", "", "endpoint URL (http or https)")
	cmd.Flags().StringVar(&opts.Entry.Kind, "kind", "", "mcp or http")
	cmd.Flags().StringVar(&opts.Entry.Plan, "plan", "standard", "standard (every 12h) or frequent (every 15m)")
	cmd.Flags().StringVar(&opts.Entry.Transport, "transport", "", "an mcp server's transport: streamable-http (the default) or sse")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would be added or updated; change nothing")
	for _, name := range []string{"slug", "url", "kind"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runServersAdd(ctx context.Context, opts *serversAddOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if err := opts.Entry.Validate(); err != nil {
		return &directory.InvalidError{Err: fmt.Errorf("--%w", err)}
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	s, inserted, err := directory.Add(ctx, pool, opts.Entry, nil, opts.DryRun)
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: toServerJSON(s), Text: func() error {
		verb, note := "updated", ""
		if inserted {
			verb = "added"
		}
		if opts.DryRun {
			verb, note = "would have "+verb, "; nothing changed (dry run)"
		}
		_, err := fmt.Fprintf(f.IO.Out, "%s server %s (%s, %s, every %s)%s\n", verb, s.Slug, s.Kind, s.Plan,
			render.Duration(s.CheckInterval), note)
		return err
	}})
}
