package alerts_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/testfactory"
)

// amPosted is one alert as an Alertmanager receiver got it.
type amPosted struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   *time.Time        `json:"endsAt"`
}

// A server.down whose first attempt failed is retried after the server recovered: the late down
// arrives after its recovery, and must not fire the alert again. Alertmanager gets it with endsAt
// at the recovery; a webhook gets resolved_at in its data.
func TestADownDeliveredAfterItsRecoveryIsSentResolved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)

	var mu sync.Mutex
	first := true
	var got [][]amPosted
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var alerts []amPosted
		if err := json.Unmarshal(body, &alerts); err != nil {
			t.Errorf("body: %v", err)
		}
		got = append(got, alerts)
	}))
	t.Cleanup(am.Close)
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "am", URL: am.URL,
		Format: alerts.FormatAlertmanager, Events: []string{alerts.TypeServerDown}}, "test"))
	hook := newWebhookReceiver(t, 1)
	hook.add(ctx, t, pool, "oncall")

	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	d := alerts.NewDeliverer(pool, slog.New(slog.DiscardHandler))
	_, err := d.Drain(ctx, nil) // both answer 503 to the down
	require.NoError(t, err)
	finish(ctx, t, pool, 0, srv, "ok", nil) // recovered before the down got through
	var resolved time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT resolved_at FROM alert_events WHERE type = 'server.down'`).Scan(&resolved))
	for range 2 {
		dueNow(ctx, t, pool)
		_, err = d.Drain(ctx, nil)
		require.NoError(t, err)
	}

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1, "the late down reached Alertmanager once")
	require.Len(t, got[0], 1)
	require.Equal(t, "ProbectlServerDown", got[0][0].Labels["alertname"])
	require.NotNil(t, got[0][0].EndsAt, "a down sent after its recovery ends at the recovery")
	require.WithinDuration(t, resolved, *got[0][0].EndsAt, time.Millisecond)

	var down *alerts.Event
	for i := range hook.taken {
		if hook.taken[i].Type == alerts.TypeServerDown {
			down = &hook.taken[i]
		}
	}
	require.NotNil(t, down)
	require.NotNil(t, down.Data.ResolvedAt, "the webhook's late down says it was resolved")
	require.WithinDuration(t, resolved, *down.Data.ResolvedAt, time.Millisecond)
}
