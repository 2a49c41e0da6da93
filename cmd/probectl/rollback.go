package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/release"
)

type rollbackOptions struct {
	f          *factory
	ToPrevious bool
	FanoutOff  bool
	Force      bool
	Reason     string
	DryRun     bool
	Yes        bool
	Actor      string
}

func newRollbackCmd(f *factory) *cobra.Command {
	opts := &rollbackOptions{f: f}
	cmd := &cobra.Command{
		Use:   "rollback --to-previous | --fanout-off [--reason WHY] [--yes]",
		Short: "Go back: reactivate the previous release, or switch fan-out off",
		Long: `Take one of the two ways back the active release's plan approved:

  --to-previous   the release that was active before the current one is active again
                  (for a fan-out-off release: the one before the release it came from)
  --fanout-off    the same version with no fan-out messages and one check at a time,
                  recorded as a release of its own derived from the current one

A way back the plan did not approve is refused (exit 2) unless --force, which needs --reason.
The rollback is one transaction on the releases tables only: it never touches servers, jobs,
runs or rounds, so every observation made stays. Two rollbacks at once take turns; a rollback to
the state already reached says so and exits 0. The next round started afterwards runs with the
new settings, and a worker still running the rolled-back version refuses to run rounds.

It prints the settings before and after, and asks for confirmation when run on a terminal;
--yes skips the question (and is required when there is no terminal to ask on). --dry-run shows
the change and makes none.`,
		Example: `  probectl rollback --fanout-off --reason "duplicate claims in the 20:55 round"
  probectl rollback --to-previous --yes
  probectl rollback --to-previous --dry-run
  probectl rollback --fanout-off --force --reason "plan did not list it; duplicates live"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRollback(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.ToPrevious, "to-previous", false, "make the previous release active again")
	fl.BoolVar(&opts.FanoutOff, "fanout-off", false, "keep the version, with fan-out 0 and concurrency 1")
	fl.BoolVar(&opts.Force, "force", false, "roll back even though the plan did not approve this way (needs --reason)")
	fl.StringVar(&opts.Reason, "reason", "", "why, for the history")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show the change without making it")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.StringVar(&opts.Actor, "actor", "", "who rolls back (default $USER)")
	return cmd
}

// rollbackJSON is the documented JSON shape of a rollback (docs/release.md).
type rollbackJSON struct {
	Way         string      `json:"way"`
	DryRun      bool        `json:"dry_run"`
	Applied     bool        `json:"applied"`
	AlreadyDone bool        `json:"already_done"`
	Forced      bool        `json:"forced"`
	From        releaseJSON `json:"from"`
	To          releaseJSON `json:"to"`
	Event       *eventJSON  `json:"event"`
}

func runRollback(ctx context.Context, opts *rollbackOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.ToPrevious == opts.FanoutOff {
		return exit.UsageError(errors.New("pass exactly one of --to-previous and --fanout-off"))
	}
	req := release.RollbackRequest{Way: release.WayPrevious, Actor: actorFrom(f, opts.Actor),
		Reason: opts.Reason, Force: opts.Force}
	if opts.FanoutOff {
		req.Way = release.WayFanoutOff
	}
	if err := release.ValidateRollback(req); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	plan, err := release.PlanRollback(ctx, pool, req)
	if err != nil {
		return err
	}
	if !plan.AlreadyDone && !opts.DryRun {
		if err := showPlan(f, format, plan); err != nil {
			return err
		}
		if !opts.Yes {
			if !f.IO.CanPrompt() {
				return exit.UsageError(errors.New("a rollback asks for confirmation and there is no terminal to ask on: " +
					"pass --yes (or --dry-run to only see the change); nothing changed"))
			}
			if err := confirm(f, plan); err != nil {
				return err
			}
		}
		req.ExpectActive = plan.From.ID
		if plan, err = release.Rollback(ctx, pool, req); err != nil {
			return err
		}
	}
	return renderRollback(f, format, plan, opts.DryRun)
}

// showPlan prints before and after on a terminal, before the question; JSON waits for the result.
func showPlan(f *factory, format string, plan *release.RollbackPlan) error {
	return render.Output(f.IO.Out, format, render.View{Text: func() error { return writePlan(f, plan, "will") }})
}

func writePlan(f *factory, plan *release.RollbackPlan, tense string) error {
	what := "make the previous release active again"
	if plan.Way == release.WayFanoutOff {
		what = "switch fan-out off"
	}
	forced := ""
	if plan.Forced {
		forced = " (forced: the plan of " + releaseName(plan.From) + " did not approve it)"
	}
	to := releaseName(plan.To)
	if plan.To.ID == 0 {
		to = fmt.Sprintf("a new release (%s, fan-out off)", plan.To.Version)
	}
	if _, err := fmt.Fprintf(f.IO.Out, "rollback %s %s: %s -> %s%s\n", tense, what, releaseName(plan.From), to, forced); err != nil {
		return err
	}
	tbl := render.NewTable(f.IO.Out, "SETTING", "BEFORE", "AFTER")
	before, after := settingsRows(plan.From), settingsRows(plan.To)
	for i := range before {
		tbl.Row(before[i][0], before[i][1], after[i][1])
	}
	return tbl.Render()
}

// confirm asks on the terminal; anything but yes cancels (exit 2, nothing changed).
func confirm(f *factory, plan *release.RollbackPlan) error {
	return askYes(f, fmt.Sprintf("roll back %s now?", releaseName(plan.From)), "rollback cancelled; nothing changed")
}

func renderRollback(f *factory, format string, plan *release.RollbackPlan, dryRun bool) error {
	return render.Output(f.IO.Out, format, rollbackView(f, plan, dryRun))
}

// rollbackView is what a rollback did, or would do (dryRun): rollbackJSON, or a sentence (and the
// plan's before and after, in a dry run).
func rollbackView(f *factory, plan *release.RollbackPlan, dryRun bool) render.View {
	out := rollbackJSON{Way: string(plan.Way), DryRun: dryRun, Applied: plan.Event != nil,
		AlreadyDone: plan.AlreadyDone, Forced: plan.Forced, From: toReleaseJSON(plan.From), To: toReleaseJSON(plan.To)}
	if plan.Event != nil {
		ev := toEventJSON(*plan.Event)
		out.Event = &ev
	}
	return render.View{JSON: out, Text: func() error { return writeRollback(f, plan, dryRun) }}
}

// writeRollback says what a rollback did, or would do.
func writeRollback(f *factory, plan *release.RollbackPlan, dryRun bool) error {
	switch {
	case plan.AlreadyDone:
		_, err := fmt.Fprintln(f.IO.Out, alreadyText(plan))
		return err
	case dryRun:
		if err := writePlan(f, plan, "would"); err != nil {
			return err
		}
		_, err := fmt.Fprintln(f.IO.Out, "dry run: nothing changed")
		return err
	}
	_, err := fmt.Fprintf(f.IO.Out, "rolled back: %s is active (was %s); recorded by %s at %s\n",
		releaseName(plan.To), releaseName(plan.From), plan.Event.Actor, plan.Event.At.Format("2006-01-02T15:04:05Z"))
	return err
}

func alreadyText(plan *release.RollbackPlan) string {
	state := "fan-out is already off"
	if plan.Way == release.WayPrevious {
		state = "already rolled back to the previous release"
	}
	s := fmt.Sprintf("%s: %s is active", state, releaseName(plan.To))
	if d := plan.Done; d != nil {
		s += fmt.Sprintf(" since %s (by %s", d.At.Format("2006-01-02T15:04:05Z"), d.Actor)
		if d.FromReleaseID != nil {
			s += fmt.Sprintf(", from #%d", *d.FromReleaseID)
		}
		if d.Reason != "" {
			s += ": " + d.Reason
		}
		s += ")"
	}
	return s + "; nothing to do"
}
