package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

type alertsPolicyOptions struct {
	f *factory
}

func newAlertsPolicyCmd(f *factory) *cobra.Command {
	opts := &alertsPolicyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show the directory-wide alert policy",
		Long: `Show the alert policy every server is judged by: how many consecutive failed checks take a
server down (down_after), how many ok checks bring it up (up_after), the storm guard (a round
with at least storm_share per cent of its checks failed, among at least storm_min, is degraded)
and how often an open alert is sent to Alertmanager again (resend_every).`,
		Example: `  probectl alerts policy
  probectl alerts policy -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runAlertsPolicy(cmd.Context(), opts) },
	}
	cmd.AddCommand(newAlertsPolicySetCmd(f))
	return cmd
}

// policyJSON is the documented JSON shape of the alert policy.
type policyJSON struct {
	DownAfter          int       `json:"down_after"`
	UpAfter            int       `json:"up_after"`
	StormShare         int       `json:"storm_share"`
	StormMin           int       `json:"storm_min"`
	ResendEverySeconds float64   `json:"resend_every_seconds"`
	UpdatedAt          time.Time `json:"updated_at"`
	UpdatedBy          string    `json:"updated_by"`
}

func toPolicyJSON(p queries.AlertPolicy) policyJSON {
	return policyJSON{DownAfter: p.DownAfter, UpAfter: p.UpAfter, StormShare: p.StormShare, StormMin: p.StormMin,
		ResendEverySeconds: p.ResendEvery.Seconds(), UpdatedAt: p.UpdatedAt, UpdatedBy: p.UpdatedBy}
}

func policyRows(p queries.AlertPolicy) [][2]string {
	return [][2]string{
		{"down_after", strconv.Itoa(p.DownAfter)},
		{"up_after", strconv.Itoa(p.UpAfter)},
		{"storm_share", fmt.Sprintf("%d%%", p.StormShare)},
		{"storm_min", strconv.Itoa(p.StormMin)},
		{"resend_every", render.Duration(p.ResendEvery)},
	}
}

func runAlertsPolicy(ctx context.Context, opts *alertsPolicyOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	p, err := alerts.ReadPolicy(ctx, pool)
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: toPolicyJSON(p), Text: func() error {
		tbl := render.NewTable(f.IO.Out, "SETTING", "VALUE")
		for _, r := range policyRows(p) {
			tbl.Row(r[0], r[1])
		}
		return tbl.Render()
	}})
}

type alertsPolicySetOptions struct {
	f                                        *factory
	DownAfter, UpAfter, StormShare, StormMin int
	ResendEvery                              time.Duration
	DryRun                                   bool
	changed                                  func(string) bool
}

func newAlertsPolicySetCmd(f *factory) *cobra.Command {
	opts := &alertsPolicySetOptions{f: f}
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change the directory-wide alert policy",
		Long: fmt.Sprintf(`Change the settings given; the others stay. Bounds: --down-after and --up-after 1 to %d,
--storm-share 1 to %d (per cent), --storm-min 1 to %d, --resend-every %s to %s (it must stay
below your Alertmanager's resolve_timeout, 5m by default). A value out of bounds exits 2 and
changes nothing; --dry-run shows the change without making it. The new policy judges the next
runs stored; states already reached stay until a run changes them.`, alerts.MaxAfter, alerts.MaxStormShare,
			alerts.MaxStormMin, render.Duration(alerts.MinResendEvery), render.Duration(alerts.MaxResendEvery)),
		Example: `  probectl alerts policy set --down-after 3
  probectl alerts policy set --storm-share 60 --storm-min 20 --dry-run
  probectl alerts policy set --resend-every 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.changed = cmd.Flags().Changed
			return runAlertsPolicySet(cmd.Context(), opts)
		},
	}
	// The defaults shown are a new database's, the bounds the policy's (internal/alerts).
	def := alerts.DefaultPolicy()
	fl := cmd.Flags()
	fl.IntVar(&opts.DownAfter, "down-after", def.DownAfter,
		fmt.Sprintf("consecutive failed checks that take a server down (1-%d)", alerts.MaxAfter))
	fl.IntVar(&opts.UpAfter, "up-after", def.UpAfter,
		fmt.Sprintf("consecutive ok checks that bring a down server up (1-%d)", alerts.MaxAfter))
	fl.IntVar(&opts.StormShare, "storm-share", def.StormShare,
		fmt.Sprintf("per cent of a round's checks failed that make it degraded (1-%d)", alerts.MaxStormShare))
	fl.IntVar(&opts.StormMin, "storm-min", def.StormMin,
		fmt.Sprintf("checks a round must have made to be judged degraded (1-%d)", alerts.MaxStormMin))
	fl.DurationVar(&opts.ResendEvery, "resend-every", def.ResendEvery,
		fmt.Sprintf("how often an open alert is sent to Alertmanager again (%s-%s)",
			render.Duration(alerts.MinResendEvery), render.Duration(alerts.MaxResendEvery)))
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show the change, make none")
	return cmd
}

func runAlertsPolicySet(ctx context.Context, opts *alertsPolicySetOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	c := alerts.PolicyChange{By: actorFrom(f, "")}
	pick := func(flag string, v *int) *int {
		if opts.changed(flag) {
			return v
		}
		return nil
	}
	c.DownAfter = pick("down-after", &opts.DownAfter)
	c.UpAfter = pick("up-after", &opts.UpAfter)
	c.StormShare = pick("storm-share", &opts.StormShare)
	c.StormMin = pick("storm-min", &opts.StormMin)
	if opts.changed("resend-every") {
		c.ResendEvery = &opts.ResendEvery
	}
	if c.DownAfter == nil && c.UpAfter == nil && c.StormShare == nil && c.StormMin == nil && c.ResendEvery == nil {
		return exit.UsageError(fmt.Errorf("name at least one setting to change: --down-after, --up-after, --storm-share, --storm-min or --resend-every"))
	}
	// Bounds first, so bad input exits 2 without a database.
	if err := alerts.CheckChange(c); err != nil {
		return alertsError(err)
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	before, after, err := alerts.SetPolicy(ctx, pool, c, opts.DryRun)
	if err != nil {
		return alertsError(err)
	}
	return render.Output(f.IO.Out, format, render.View{
		JSON: map[string]any{"before": toPolicyJSON(before), "after": toPolicyJSON(after), "dry_run": opts.DryRun},
		Text: func() error {
			tbl := render.NewTable(f.IO.Out, "SETTING", "BEFORE", "AFTER")
			b, a := policyRows(before), policyRows(after)
			for i := range b {
				tbl.Row(b[i][0], b[i][1], a[i][1])
			}
			if err := tbl.Render(); err != nil {
				return err
			}
			if opts.DryRun {
				fmt.Fprintln(f.IO.Out, "\ndry run: nothing changed")
			}
			return nil
		},
	})
}
