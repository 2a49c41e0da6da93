package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

type deployListOptions struct {
	f     *factory
	Limit int
}

// maxDeployListLimit bounds deploy list --limit, as runs list's is bounded.
const maxDeployListLimit = 10000

func newDeployListCmd(f *factory) *cobra.Command {
	opts := &deployListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show the releases and who deployed or rolled back which, when and why",
		Long: `Show the releases, newest first, with their settings and the ways back their plans approved,
which one is active (*), and then the history: every deploy and rollback, when, by whom, and why.
A rollback with fan-out off appears as a release of its own (kind fanout-off) derived from the
release it rolled back; a rollback to the previous release reactivates that release.`,
		Example: `  probectl deploy list
  probectl deploy list --limit 5 -o json | jq '.releases[] | select(.active)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeployList(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 20, "show at most this many releases and history entries (1..10000)")
	return cmd
}

func runDeployList(ctx context.Context, opts *deployListOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Limit < 1 || opts.Limit > maxDeployListLimit {
		return exit.UsageError(fmt.Errorf("--limit %d: must be between 1 and %d", opts.Limit, maxDeployListLimit))
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	h, err := release.ReadHistory(ctx, pool, opts.Limit)
	if err != nil {
		return err
	}
	out := struct {
		Releases []releaseJSON `json:"releases"`
		Events   []eventJSON   `json:"events"`
	}{Releases: []releaseJSON{}, Events: []eventJSON{}}
	for _, r := range h.Releases {
		out.Releases = append(out.Releases, toReleaseJSON(r))
	}
	for _, e := range h.Events {
		out.Events = append(out.Events, toEventJSON(e))
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error { return writeDeployList(f, h) }})
}

// writeDeployList writes the releases, the active one marked, then their history.
func writeDeployList(f *factory, h *release.History) error {
	if len(h.Releases) == 0 {
		_, err := fmt.Fprintln(f.IO.Out, "no release recorded yet; record one with `probectl deploy record`")
		return err
	}
	st := render.StylesFor(f.IO)
	if _, err := fmt.Fprintln(f.IO.Out, st.Title.Render("Releases")); err != nil {
		return err
	}
	tbl := render.NewTable(f.IO.Out, "", "ID", "VERSION", "KIND", "FANOUT", "CLAIM", "CONC", "SPACING", "FINISH", "WAYS BACK",
		f.IO.TimeHeader("DEPLOYED"), "BY", "PREVIOUS")
	for _, r := range h.Releases {
		mark := ""
		if r.Active {
			mark = "*"
		}
		c := r.Carried
		tbl.Row(mark, r.ID, r.Version, r.Kind, showSetting(c, settings.Fanout), showSetting(c, settings.ClaimLimit),
			showSetting(c, settings.Concurrency), showSetting(c, settings.MinSpacing), showSetting(c, settings.Finish),
			waysText(r.WaysBack), f.IO.Time(r.DeployedAt), r.DeployedBy, idText(r.PreviousID))
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f.IO.Out, "\n"+st.Title.Render("History")); err != nil {
		return err
	}
	ev := render.NewTable(f.IO.Out, f.IO.TimeHeader("WHEN"), "WHAT", "RELEASE", "FROM", "BY", "WHY")
	for _, e := range h.Events {
		what := e.Action
		if e.Action != release.ActionDeploy {
			what = "rollback " + e.Action
		}
		if e.Forced {
			what += " (forced)"
		}
		ev.Row(f.IO.Time(e.At), what, fmt.Sprintf("#%d", e.ReleaseID), idText(e.FromReleaseID), e.Actor, dash(e.Reason))
	}
	return ev.Render()
}

func idText(id *int64) string {
	if id == nil {
		return "-"
	}
	return fmt.Sprintf("#%d", *id)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
