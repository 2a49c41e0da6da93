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
	Format string
	DryRun bool
}

func newServersImportCmd(f *factory) *cobra.Command {
	opts := &serversImportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "import [--format auto|mcp-registry] FILE",
		Short: "Import servers from a CSV or JSON-lines file (all or nothing)",
		Long: `Import servers from FILE ('-' reads standard input): CSV with a header row naming the
columns slug, url, kind, plan and transport (plan and transport may be left out), or JSON lines,
one object per line with the same fields, or a JSON array of such objects.

  kind       mcp (initialize + tools/list over MCP) or http (a GET)
  plan       standard (checked every 12h, the default) or frequent (every 15m)
  transport  mcp only: streamable-http (the default) or sse

Servers are upserted by slug, in one transaction: a bad row (a bad URL, an unknown kind or plan,
a slug that appears twice in the file) is reported with its line number, nothing is imported,
and probectl exits 2. New servers are due at once; an existing server keeps its next check time.

--format mcp-registry reads the official MCP registry's shapes instead: a server.json document,
or the registry's list response ({"servers": [{"server": {...}, "_meta": {...}}], ...}). Of the
versions a list holds, the one marked isLatest is taken; deleted entries are skipped. Each of an
entry's remotes becomes an mcp server (its type is the transport). The slug is the registry name
lower-cased with '/' and '.' as '-' (io.github.acme/weather → io-github-acme-weather), stable
across imports; a second remote gets "-<type>" appended; a name over 100 characters is cut and
suffixed with a short hash. Entries with only packages, and remote URLs with {variables}, are
skipped; the summary counts every skip. A bad entry is named by its index and name.

Each server records the registry name it came from. Two names that map to one slug
(io.github.acme/weather-x and io.github.acme-weather/x) are refused naming both, whether both are
in the file or one is already in the directory; so is a slug that names a server added by hand.
Nothing is imported then, and probectl exits 2: a registry name never takes over another's server.
To follow the registry's live API instead of a saved page, see 'probectl servers sync'.`,
		Example: `  probectl servers import servers.csv
  cat servers.jsonl | probectl servers import -

  # servers.csv
  slug,url,kind,plan
  weather,https://weather.example/mcp,mcp,standard
  status-page,https://status.example/health,http,frequent

  # the official MCP registry's list response, or one server.json
  curl -s 'https://registry.modelcontextprotocol.io/v0/servers?limit=100' > registry.json
  probectl servers import --format mcp-registry registry.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return runServersImport(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "auto", "auto (CSV or JSON lines, by the first character) or mcp-registry")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "check the file and count what would be added and updated; change nothing")
	return cmd
}

func runServersImport(ctx context.Context, opts *serversImportOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Format != "auto" && opts.Format != "mcp-registry" {
		return exit.UsageError(fmt.Errorf("--format %q: must be auto or mcp-registry", opts.Format))
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
	if opts.Format == "mcp-registry" {
		return importRegistry(ctx, opts, format, in)
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
	return render.Output(f.IO.Out, format, render.View{JSON: res, Text: func() error {
		said := "imported %d server(s): %d new, %d updated\n"
		if opts.DryRun {
			said = "would import %d server(s): %d new, %d updated; nothing changed (dry run)\n"
		}
		_, err := fmt.Fprintf(f.IO.Out, said, res.Inserted+res.Updated, res.Inserted, res.Updated)
		return err
	}})
}

// importRegistry is the --format mcp-registry path: the registry's shapes in, the same
// all-or-nothing import out, with what was skipped.
func importRegistry(ctx context.Context, opts *serversImportOptions, format string, in io.Reader) error {
	f := opts.f
	parsed, err := directory.ParseRegistry(in)
	if err != nil {
		return exit.UsageError(fmt.Errorf("%s: %w", displayName(opts.File), err))
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	var res directory.ImportResult
	if len(parsed.Rows) > 0 {
		if res, err = directory.ImportRegistry(ctx, pool, parsed.Rows, actorFrom(f, ""), nil, opts.DryRun); err != nil {
			var collision *directory.CollisionError
			if errors.As(err, &collision) {
				return exit.UsageError(fmt.Errorf("%s: %w", displayName(opts.File), collision))
			}
			return err
		}
	}
	sk := parsed.Skipped
	out := struct {
		directory.ImportResult
		Skipped directory.RegistrySkipped `json:"skipped"`
	}{res, sk}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		verb := "imported"
		if opts.DryRun {
			verb = "would import (dry run, nothing changed)"
		}
		_, err := fmt.Fprintf(f.IO.Out, "%s %d server(s): %d new, %d updated; skipped %d deleted, %d older version(s), "+
			"%d with packages only, %d templated URL(s)\n", verb, res.Inserted+res.Updated, res.Inserted, res.Updated,
			sk.Deleted, sk.OlderVersion, sk.PackagesOnly, sk.TemplatedURL)
		return err
	}})
}

func displayName(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}
