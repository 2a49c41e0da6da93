package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
)

type alertsDeliverOptions struct {
	f *factory
}

func newAlertsDeliverCmd(f *factory) *cobra.Command {
	opts := &alertsDeliverOptions{f: f}
	cmd := &cobra.Command{
		Use:   "deliver",
		Short: "Deliver the pending alert events once, and re-send open alerts to Alertmanager",
		Long: `Emit one round.dead alert for each round found dead since (its heartbeat stopped; once per
round, as the worker leader's tick and run round do; none for a round whose every job runs recover
stored already), and one round.recovered for a round alerted dead that is recovered since, then attempt every delivery that is due now, once each,
the way 'probectl worker' does (a delivery another process is attempting at that moment is left to
it), then send the open server.down alerts
to each Alertmanager receiver again so they stay firing. For a directory run from cron without a
worker: run it every minute. Exit 1 when an attempt failed (it stays pending for the next run,
until 24 h after its event), 3 when the database cannot be reached.`,
		Example: `  probectl alerts deliver
  * * * * * probectl alerts deliver -o json   # crontab`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runAlertsDeliver(cmd.Context(), opts) },
	}
	return cmd
}

func runAlertsDeliver(ctx context.Context, opts *alertsDeliverOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	d := alerts.NewDeliverer(pool, slog.New(slog.NewTextHandler(f.IO.ErrOut, nil)))
	s, err := d.Drain(ctx, nil)
	if err != nil {
		return err
	}
	resent, rerr := d.Resend(ctx)
	s.Resent = resent
	if err := render.Output(f.IO.Out, format, render.View{JSON: s, Text: func() error {
		_, err := fmt.Fprintf(f.IO.Out, "attempts %d, delivered %d, given up %d, still pending %d; open alerts re-sent to Alertmanager: %d\n",
			s.Attempts, s.Delivered, s.Failed, s.Pending, s.Resent)
		return err
	}}); err != nil {
		return err
	}
	if s.Attempts > s.Delivered || rerr != nil {
		return &silentError{code: exit.Found}
	}
	return nil
}
