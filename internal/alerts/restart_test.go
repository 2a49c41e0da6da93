package alerts_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/pglaunch"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// PostgreSQL restarts while the receiver holds an attempt: the receiver then answers 200, and the
// record, whose first connection died with the server, is made on a fresh one within the record's
// budget: delivered, recorded once, and not sent again. (A database lost for longer than that
// budget leaves the attempt unrecorded, and once its lease runs out the next attempt sends the
// event again with the same webhook-id, as after a crash; nothing is lost and no other event is
// invented.)
func TestAPostgresRestartDuringADeliveryIsRecordedOnceItIsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, err := pglaunch.Start(ctx, pglaunch.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Stop() })
	url := cl.URL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	pool := dbtest.Pool(t, url)

	arrived, restarted := make(chan struct{}), make(chan struct{})
	var (
		mu   sync.Mutex
		seen []string
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("webhook-id"))
		first := len(seen) == 1
		mu.Unlock()
		if first {
			close(arrived)
			<-restarted
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "oncall", URL: rcv.URL,
		Format: alerts.FormatStandardWebhooks, Secret: []byte("whsec_" + strings.Repeat("QUJD", 8))}, "test"))
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	keys, err := queries.PendingDeliveries(ctx, pool, nil, nil, 10)
	require.NoError(t, err)
	require.Len(t, keys, 1)

	d := alerts.NewDeliverer(pool, nil)
	done := make(chan error, 1)
	go func() {
		_, err := d.Attempt(ctx, keys[0])
		done <- err
	}()
	<-arrived
	require.NoError(t, cl.Shutdown())
	require.NoError(t, cl.Resume(ctx))
	close(restarted)
	require.NoError(t, <-done, "the attempt is recorded on a fresh connection once the server is back")

	leaseRunsOut(ctx, t, pool)
	s, err := d.Drain(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, alerts.DrainSummary{}, s, "delivered: nothing to send again")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	var attempts, events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM alert_delivery_attempts),
		(SELECT count(*) FROM alert_events)`).Scan(&attempts, &events))
	require.Equal(t, []int{1, 1}, []int{attempts, events})
}
