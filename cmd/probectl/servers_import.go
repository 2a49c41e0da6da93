package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
)

type serversImportOptions struct {
	f      *factory
	File   string
	DryRun bool
}

func newServersImportCmd(f *factory) *cobra.Command {
	opts := &serversImportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import servers from a CSV or JSON-lines file (all or nothing)",
		Long: `Import servers from FILE ('-' reads standard input): CSV with a header row naming the
columns slug, url, kind and plan (plan may be left out), or JSON lines, one object per line
with the same fields.

  kind   mcp (initialize + tools/list over streamable HTTP) or http (a GET)
  plan   standard (checked every 12h, the default) or frequent (every 15m)

Servers are upserted by slug, in one transaction: a bad row (a bad URL, an unknown kind or plan,
a slug that appears twice in the file) is reported with its line number, nothing is imported,
and probectl exits 2. New servers are due at once; an existing server keeps its next check time.`,
		Example: `  probectl servers import servers.csv
  cat servers.jsonl | probectl servers import -

  # servers.csv
  slug,url,kind,plan
  weather,https://weather.example/mcp,mcp,standard
  status-page,https://status.example/health,http,frequent`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return runServersImport(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "check the file and count what would be added and updated; change nothing")
	return cmd
}

func runServersImport(ctx context.Context, opts *serversImportOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	var in io.Reader = f.IO.In
	if opts.File != "-" {
		file, err := os.Open(opts.File)
		if err != nil {
			// *fs.PathError already says "open FILE: ..."; say the file once.
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				err = pathErr.Err
			}
			return exit.UsageError(fmt.Errorf("%s: %w", opts.File, err))
		}
		defer file.Close()
		in = file
	}
	rows, err := directory.Parse(in)
	if err != nil {
		return exit.UsageError(importError(displayName(opts.File), err))
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	res, err := directory.Import(ctx, pool, rows, nil, opts.DryRun)
	if err != nil {
		return err
	}
	if format == "json" {
		return render.JSON(f.IO.Out, res)
	}
	if opts.DryRun {
		_, err = fmt.Fprintf(f.IO.Out, "would import %d server(s): %d new, %d updated; nothing changed (dry run)\n", res.Inserted+res.Updated, res.Inserted, res.Updated)
		return err
	}
	_, err = fmt.Fprintf(f.IO.Out, "imported %d server(s): %d new, %d updated\n", res.Inserted+res.Updated, res.Inserted, res.Updated)
	return err
}

func displayName(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}
