package statuspage_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/statuspage"
)

func TestMetricsCountAlertDeliveryAttemptsByReceiverAndOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	// One event with one delivery to "oncall": two failed attempts, then one taken.
	_, err := pool.Exec(ctx, `
		WITH r AS (INSERT INTO alert_receivers (name, url, format, events)
		           VALUES ('oncall', 'http://127.0.0.1:9/hook', 'slack', ARRAY['prober.degraded']) RETURNING id),
		     e AS (INSERT INTO alert_events (type) VALUES ('prober.degraded') RETURNING id),
		     d AS (INSERT INTO alert_deliveries (event_id, receiver_id) SELECT e.id, r.id FROM e, r
		           RETURNING event_id, receiver_id)
		INSERT INTO alert_delivery_attempts (event_id, receiver_id, attempt, status_code)
		SELECT d.event_id, d.receiver_id, a.n, a.code FROM d, (VALUES (1, 503), (2, NULL), (3, 200)) AS a(n, code)`)
	require.NoError(t, err)
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return time.Now() }})
	res := get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, res.Code, res.Body)
	assert.Contains(t, res.Body, "# TYPE probectl_alert_deliveries_total counter\n")
	assert.Contains(t, res.Body, `probectl_alert_deliveries_total{receiver="oncall",outcome="failed"} 2`+"\n")
	assert.Contains(t, res.Body, `probectl_alert_deliveries_total{receiver="oncall",outcome="delivered"} 1`+"\n")
	assert.NotContains(t, res.Body, "127.0.0.1:9", "no receiver URL")
	parseMetrics(t, res.Body)
}
