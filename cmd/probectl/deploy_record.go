package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

type deployRecordOptions struct {
	f       *factory
	Version string
	// Settings hold the flags of the field table's carried rows (settings.Fields).
	Settings settings.Settings
	WaysBack string
	Every    time.Duration
	Note     string
	Actor    string
	DryRun   bool

	waysBackGiven bool
}

func newDeployRecordCmd(f *factory) *cobra.Command {
	opts := &deployRecordOptions{f: f, Settings: settings.Default()}
	cmd := &cobra.Command{
		Use:   "record [--version V] [settings] --ways-back previous,fanout-off",
		Short: "Record a release and make it the active one",
		Long: `Record the release a deploy ships and make it the active release, in one transaction (the
release that was active becomes its previous release). The release names its version (by default
this binary's own), the round settings it ships, which 'run round' takes as its defaults, and the
ways back its plan approved:

  previous     'probectl rollback --to-previous' may make the previous release active again
  fanout-off   'probectl rollback --fanout-off' may keep the version with fan-out switched off
  none         neither

Without --ways-back a release approves 'previous' when there is a previous release to go back to
(and says so), none when it is the first. A rollback the plan did not approve is refused unless
forced with a reason. --dry-run shows the release, with the number it will get, and the release it
would replace, and changes nothing (not even the numbering). The settings are
checked as 'run round' checks them, including the lease check: every request of a check at
--request-timeout plus the round's --max-duration plus 30 s for the finish's writes must fit the
15-minute in-flight window. And every setting has a bound (exit 2 naming the flag and the bound):
--request-timeout 1s to 1m, --max-duration 1s to 14m, --min-spacing 10m to 7d, --fanout at
most 1000, --claim-limit and --concurrency at most 10000.
--contact is the page or address every request's User-Agent names (run round and the workers'
rounds alike), so that the operators of the probed servers can reach you.
Who deployed it is $USER unless --actor says otherwise.`,
		Example: `  probectl deploy record --ways-back previous,fanout-off --note "fan-out 19, 3 at a time"
  probectl deploy record --version v1.4.0 --fanout 0 --concurrency 1 --ways-back previous
  probectl deploy record --actor release-bot -o json
  probectl deploy record --contact https://probe.example/about --ways-back previous`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("version") {
				opts.Version = f.Build.Version
			}
			opts.waysBackGiven = cmd.Flags().Changed("ways-back")
			return runDeployRecord(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Version, "version", "", "version the release ships (default: this binary's version)")
	addSettingFlags(fl, &opts.Settings, func(f settings.Field) bool { return f.Carried })
	durationVar(fl, &opts.Every, "every", 0, "start a round this often under 'probectl worker' (5s to 24h; default: no schedule)")
	fl.StringVar(&opts.WaysBack, "ways-back", "", "approved ways back: previous, fanout-off, both (comma-separated) or none (default: previous when there is a previous release)")
	fl.StringVar(&opts.Note, "note", "", "what this release changes, for the history")
	fl.StringVar(&opts.Actor, "actor", "", "who deploys it (default $USER)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show the release that would be recorded and what it replaces; change nothing")
	return cmd
}

func runDeployRecord(ctx context.Context, opts *deployRecordOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	ways, err := release.ParseWays(opts.WaysBack)
	if err != nil {
		return exit.UsageError(fmt.Errorf("--ways-back: %w", err))
	}
	req := release.RecordRequest{Version: opts.Version, Settings: opts.Settings.Carried, WaysBack: ways,
		DefaultWaysBack: !opts.waysBackGiven, Every: opts.Every, Note: opts.Note, Actor: actorFrom(f, opts.Actor), DryRun: opts.DryRun}
	if err := release.ValidateRecord(req); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	rec, err := release.Record(ctx, pool, req)
	if err != nil {
		return err
	}
	out := map[string]any{"release": toReleaseJSON(rec.Release), "replaced": nil, "event": toEventJSON(rec.Event),
		"dry_run": opts.DryRun, "ways_back_defaulted": rec.WaysBackDefaulted}
	if rec.Replaced != nil {
		out["replaced"] = toReleaseJSON(*rec.Replaced)
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error { return writeRecorded(f, rec, opts.DryRun) }})
}

// writeRecorded says what deploy record did, or would do (dryRun), and the release's settings.
func writeRecorded(f *factory, rec *release.Recorded, dryRun bool) error {
	replaced := "it is the first release"
	if rec.Replaced != nil {
		replaced = "it replaces " + releaseName(*rec.Replaced)
	}
	said := "recorded release %s, deployed by %s, and made it active; %s\n"
	if dryRun {
		said = "would record release %s, deployed by %s, and make it active; %s; nothing changed (dry run)\n"
	}
	if _, err := fmt.Fprintf(f.IO.Out, said, releaseName(rec.Release), rec.Release.DeployedBy, replaced); err != nil {
		return err
	}
	if rec.WaysBackDefaulted {
		if _, err := fmt.Fprintf(f.IO.Out, "no --ways-back given: it approves 'previous' (rollback --to-previous to %s); "+
			"--ways-back none approves none\n", releaseName(*rec.Replaced)); err != nil {
			return err
		}
	}
	tbl := render.NewTable(f.IO.Out, "SETTING", "VALUE")
	for _, row := range settingsRows(rec.Release) {
		tbl.Row(row[0], row[1])
	}
	return tbl.Render()
}
