package main

import (
	"context"
	"log/slog"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/queries"
)

// deliverRoundAlerts delivers the events of the round run round just ran, before it exits,
// through the same code a worker runs, bounded by alerts.RoundDeliveryBound: a directory run
// from cron needs no worker for its alerts to go out. What is left stays pending for a worker
// or 'alerts deliver'; a failure is logged, never the round's.
func deliverRoundAlerts(ctx context.Context, db queries.DB, roundID int64, log *slog.Logger) {
	s, err := alerts.NewDeliverer(db, log).DrainRound(ctx, roundID, alerts.RoundDeliveryBound)
	if err != nil {
		log.Error("delivering the round's alerts", "round", roundID, "err", err)
		return
	}
	if s.Attempts > 0 || s.Pending > 0 {
		log.Info("the round's alerts", "round", roundID, "delivered", s.Delivered, "given_up", s.Failed,
			"still_pending", s.Pending)
	}
}
