package statuspage

import (
	"bufio"
	"context"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// readRunTotals reads the run counters within the read timeout.
func (h *handler) readRunTotals(ctx context.Context) ([]queries.RunTotal, error) {
	var totals []queries.RunTotal
	err := h.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		totals, err = queries.RunTotals(ctx, tx)
		return err
	})
	return totals, err
}

// writeRunMetrics writes every stored run by kind and outcome, and a histogram of check
// durations by kind. No label names a server: a directory of 100,000 servers stays a few series.
func writeRunMetrics(w io.Writer, totals []queries.RunTotal) {
	m := &metricWriter{w: bufio.NewWriter(w)}
	defer m.w.Flush()
	m.family("probectl_runs_total", "counter", "Runs stored, by check kind and the run's own outcome.")
	for _, t := range totals {
		m.sample("probectl_runs_total", []string{"kind", t.Kind, "outcome", t.Outcome}, float64(t.Runs))
	}
	type hist struct {
		count   int64
		sum     float64
		bounds  []float64
		buckets []int64
	}
	byKind := map[string]*hist{}
	var kinds []string
	for _, t := range totals {
		k := byKind[t.Kind]
		if k == nil {
			k = &hist{bounds: t.Bounds, buckets: make([]int64, len(t.Bounds))}
			byKind[t.Kind] = k
			kinds = append(kinds, t.Kind)
		}
		k.count += t.Runs
		k.sum += t.SecondsSum
		for i := range min(len(t.Buckets), len(k.buckets)) {
			k.buckets[i] += t.Buckets[i]
		}
	}
	m.family("probectl_check_duration_seconds", "histogram", "How long checks took, by check kind (every stored run).")
	for _, kind := range kinds {
		k := byKind[kind]
		for i, b := range k.bounds {
			m.sample("probectl_check_duration_seconds_bucket", []string{"kind", kind, "le", strconv.FormatFloat(b, 'g', -1, 64)}, float64(k.buckets[i]))
		}
		m.sample("probectl_check_duration_seconds_bucket", []string{"kind", kind, "le", "+Inf"}, float64(k.count))
		m.sample("probectl_check_duration_seconds_sum", []string{"kind", kind}, k.sum)
		m.sample("probectl_check_duration_seconds_count", []string{"kind", kind}, float64(k.count))
	}
}
