package statuspage

import (
	"bufio"
	"context"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// readAlertTotals reads the alert delivery counters within the read timeout.
func (h *handler) readAlertTotals(ctx context.Context) ([]queries.DeliveryTotal, error) {
	var totals []queries.DeliveryTotal
	err := h.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		totals, err = queries.DeliveryTotals(ctx, tx)
		return err
	})
	return totals, err
}

// writeAlertMetrics writes the alert delivery attempts by receiver (a name the operator chose,
// a handful of series) and how each ended: delivered (a 2xx) or failed.
func writeAlertMetrics(w io.Writer, totals []queries.DeliveryTotal) {
	m := &metricWriter{w: bufio.NewWriter(w)}
	defer m.w.Flush()
	m.family("probectl_alert_deliveries_total", "counter",
		"Alert delivery attempts, by receiver and outcome (delivered: the receiver answered 2xx; failed: anything else).")
	for _, t := range totals {
		m.sample("probectl_alert_deliveries_total", []string{"receiver", t.Receiver, "outcome", t.Outcome}, float64(t.Attempts))
	}
}
