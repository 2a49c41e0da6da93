package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

type auditToolsOptions struct {
	f *factory
	auditRange
	Server      string
	Diff        bool
	FailOnFound bool
}

func newAuditToolsCmd(f *factory) *cobra.Command {
	opts := &auditToolsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "tools [--since T] [--until T] [--server SLUG] [--diff]",
		Short: "List changes of MCP servers' tools between runs; flag those made without a version bump",
		Long: `List, for every mcp server (or the one --server names), each change of its tool list between
two consecutive runs finished in [--since, --until): tools added, removed, and changed (which of
name, title, description, inputSchema, outputSchema and annotations differ). --diff adds a changed
description's old and new text.

Each run records a fingerprint per tool (SHA-256 of the RFC 8785 canonical JSON of its definition)
and one of the whole list, in its signed result. A change while the server's version
(serverInfo.version) stayed the same is flagged changed_without_version_bump: a model reads tool
descriptions as instructions, and such a change is how a reviewed server turns hostile. A
server's first run is its baseline, not a change (the previous run may lie before --since); only
complete lists are compared: a list cut short by the request budget or the fingerprint cap, or a
server behind auth whose tools were not seen, is skipped. --fail-on-found exits 1 when any change
is flagged, after printing the report.`,
		Example: `  probectl audit tools --since 7d
  probectl audit tools --since 30d --server weather --diff
  probectl audit tools --since 24h --fail-on-found -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditTools(cmd.Context(), opts)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.Server, "server", "", "only this server (its slug)")
	cmd.Flags().BoolVar(&opts.Diff, "diff", false, "show a changed description's old and new text")
	cmd.Flags().BoolVar(&opts.FailOnFound, "fail-on-found", false, "exit 1 when any change was made without a version bump")
	return cmd
}

func runAuditTools(ctx context.Context, opts *auditToolsOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json", "csv")
	if err != nil {
		return err
	}
	since, until, err := opts.parse(f.now())
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	r, err := audit.Tools(ctx, pool, audit.ToolsParams{Since: since, Until: until, Server: opts.Server, Diff: opts.Diff})
	if errors.Is(err, queries.ErrNoServer) { // said as runs list says it
		return exit.UsageError(fmt.Errorf("--server %q: no such server; 'probectl servers list' shows them", opts.Server))
	}
	if err != nil {
		return auditError(err)
	}
	err = render.Output(f.IO.Out, format, render.View{JSON: r,
		Text: func() error { return writeToolsTable(f.IO, r) },
		CSV:  func() error { return writeToolsCSV(f.IO.Out, r) }})
	return failIfFound(err, opts.FailOnFound && r.Flagged() > 0)
}

func writeToolsTable(io *render.Streams, r *audit.ToolsReport) error {
	st := render.StylesFor(io)
	w := io.Out
	flagged := st.Pass.Render("0")
	if r.Flagged() > 0 {
		flagged = st.Fail.Render(strconv.Itoa(r.Flagged()))
	}
	fmt.Fprintf(w, "window      %s to %s\n", io.TimeMillis(r.Since), io.TimeMillis(r.Until))
	fmt.Fprintf(w, "compared    %d runs with a complete tool list, of %d servers\n", r.Runs, r.Servers)
	fmt.Fprintf(w, "changes     %d, without a version bump %s\n", len(r.Changes), flagged)
	if len(r.Changes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tbl := render.NewTable(w, "SERVER", "AT", "RUNS", "ADDED", "REMOVED", "CHANGED", "VERSION", "FLAG")
	for _, c := range r.Changes {
		flag := render.Plain("-")
		if c.Flag != "" {
			flag = render.Styled(st.Fail, c.Flag)
		}
		tbl.Row(c.Server, io.TimeMillis(c.At), fmt.Sprintf("%d→%d", c.FromRun, c.ToRun), orNone(c.Added), orNone(c.Removed),
			changedCell(c.Changed), fmt.Sprintf("%s→%s", orDash(c.VersionBefore), orDash(c.VersionAfter)), flag)
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	for _, c := range r.Changes {
		for _, ct := range c.Changed {
			if ct.DescriptionBefore == nil {
				continue
			}
			fmt.Fprintf(w, "\n%s, tool %s, run %d→%d:\n- %s\n+ %s\n", c.Server, render.Printable(ct.Name), c.FromRun, c.ToRun,
				render.Printable(*ct.DescriptionBefore), render.Printable(*ct.DescriptionAfter))
		}
	}
	return nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return render.Printable(strings.Join(names, ", "))
}

func changedCell(changed []audit.ChangedTool) string {
	if len(changed) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(changed))
	for _, ct := range changed {
		parts = append(parts, fmt.Sprintf("%s (%s)", ct.Name, strings.Join(ct.Fields, ", ")))
	}
	return render.Printable(strings.Join(parts, "; "))
}

func writeToolsCSV(w io.Writer, r *audit.ToolsReport) error {
	cw := render.NewCSV(w)
	cw.Write("server", "from_run", "to_run", "at", "added", "removed", "changed", "version_before",
		"version_after", "flag")
	for _, c := range r.Changes {
		changed := make([]string, 0, len(c.Changed))
		for _, ct := range c.Changed {
			changed = append(changed, ct.Name+":"+strings.Join(ct.Fields, "+"))
		}
		opt := func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		}
		cw.Write(c.Server, strconv.FormatInt(c.FromRun, 10), strconv.FormatInt(c.ToRun, 10),
			c.At.UTC().Format(time.RFC3339Nano), strings.Join(c.Added, " "), strings.Join(c.Removed, " "),
			strings.Join(changed, " "), opt(c.VersionBefore), opt(c.VersionAfter), c.Flag)
	}
	return cw.Flush()
}
