package alerts_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Without a worker, 'alerts deliver' (Drain of the whole outbox) is where a round found dead gets
// its one round.dead alert, delivered in the same drain; draining again emits nothing more.
func TestDrainingTheOutboxAlertsARoundWhoseHeartbeatStoppedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	got := make(chan string, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-id")
	}))
	t.Cleanup(rcv.Close)
	_, err := queries.AddReceiver(ctx, pool, queries.ReceiverSecret{Name: "hook", URL: rcv.URL, Format: "slack",
		Events: []string{alerts.TypeRoundDead}}, "test")
	require.NoError(t, err)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})

	d := alerts.NewDeliverer(pool, slog.New(slog.DiscardHandler))
	for range 2 {
		s, err := d.Drain(ctx, nil)
		require.NoError(t, err)
		require.LessOrEqual(t, s.Delivered, 1)
	}
	require.Equal(t, []eventRow{{Type: alerts.TypeRoundDead, State: "dead", Previous: "running", Runs: []int64{}}}, events(ctx, t, pool))
	require.Len(t, got, 1)
	evs, err := queries.ListAlertEvents(ctx, pool, false, nil, 10)
	require.NoError(t, err)
	require.Equal(t, round, *evs[0].RoundID)
}
