package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
)

type runsExportOptions struct {
	f      *factory
	Before string
	From   string
	Out    string
	Actor  string
}

func newRunsExportCmd(f *factory) *cobra.Command {
	opts := &runsExportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "export --before DATE --out FILE",
		Short: "Write the runs before a day to a signed archive that outlives the database",
		Long: `Write every stored run of the jobs requested before DATE (YYYY-MM-DD, UTC; and on or after
--from DATE when given) to FILE as JSON lines: the run, its job, its server (slug, kind, URL
redacted as every view prints it), its result and its DSSE envelope as signed. A FILE ending in
.gz is gzip-compressed, one ending in .zst zstd-compressed (window 8 MiB); any other is plain.
The last line is a manifest: {"manifest": {"runs", "first_started_at", "last_started_at",
"before", "sha256"}}, the SHA-256 of every byte before it, uncompressed.

FILE must not exist (an archive is never overwritten); it is written under a temporary name and
appears only once complete. The export is recorded in the database (file name, range, count,
SHA-256, who, when): 'runs prune' drops only partitions an export covers. Verify an archive
offline with 'probectl runs verify --archive FILE --public-key PEM'.

-o json prints the recorded export: {"id", "file", "before", "runs", "first_at", "last_at",
"max_run_id", "sha256", "exported_by", "exported_at"}.`,
		Example: `  probectl runs export --before 2026-09-01 --out runs-before-2026-09-01.jsonl.gz
  probectl runs export --from 2026-08-01 --before 2026-09-01 --out runs-2026-08.jsonl.zst`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunsExport(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Before, "before", "", "export the runs of jobs requested before this day (YYYY-MM-DD, UTC; required)")
	cmd.Flags().StringVar(&opts.From, "from", "", "and on or after this day (YYYY-MM-DD, UTC; default: the oldest kept)")
	cmd.Flags().StringVar(&opts.Out, "out", "", "the archive file to write (.gz: gzip, .zst: zstd; must not exist; required)")
	cmd.Flags().StringVar(&opts.Actor, "actor", "", "who exports, as recorded (default $USER)")
	return cmd
}

func runRunsExport(ctx context.Context, opts *runsExportOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Before == "" {
		return exit.UsageError(errors.New("--before: required (a day, YYYY-MM-DD)"))
	}
	if opts.Out == "" {
		return exit.UsageError(errors.New("--out: required (the archive file to write)"))
	}
	before, err := parseDay("before", opts.Before)
	if err != nil {
		return err
	}
	// The archive's directory must be there: a path to none is a wrong flag (exit 2), found
	// before the database is asked, not a failure to write (exit 3) after it.
	if info, err := os.Stat(filepath.Dir(opts.Out)); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		(err == nil && !info.IsDir()) {
		return exit.UsageError(fmt.Errorf("--out %s: its directory %s is not an existing directory", opts.Out, filepath.Dir(opts.Out)))
	}
	req := archive.Request{Path: opts.Out, Before: before, Who: actorFrom(f, opts.Actor)}
	if opts.From != "" {
		from, err := parseDay("from", opts.From)
		if err != nil {
			return err
		}
		if !from.Before(before) {
			return exit.UsageError(fmt.Errorf("--from %s is not before --before %s", opts.From, opts.Before))
		}
		req.From = &from
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	e, err := archive.Export(ctx, pool, req)
	if errors.Is(err, archive.ErrExists) {
		return exit.UsageError(fmt.Errorf("--out: %w", err))
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	return render.Output(f.IO.Out, format, render.View{JSON: e, Text: func() error {
		_, err := fmt.Fprintf(f.IO.Out, "exported %d run(s) to %s in %s (export %d, sha256 %s)\n",
			e.Runs, opts.Out, render.Duration(took), e.ID, e.SHA256)
		return err
	}})
}
