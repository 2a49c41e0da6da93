package alerts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// blinkOnRecord is a pgx tracer that, the first time a connection sends the record of a delivery
// attempt, has that connection's backend terminated first: the database blinks between the
// receiver's answer and the record. With commitFirst, the record is first made by another session
// (and committed), as when the record committed and its answer was lost with the connection.
type blinkOnRecord struct {
	admin       *pgxpool.Pool
	commitFirst bool
	once        sync.Once
	blinked     bool
}

func (b *blinkOnRecord) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if data.SQL != queries.SQL("RecordAttempt") {
		return ctx
	}
	b.once.Do(func() {
		if b.commitFirst {
			tag, err := b.admin.Exec(ctx, data.SQL, data.Args...)
			if err != nil || tag.RowsAffected() != 1 {
				panic("the record made beside the deliverer did not record")
			}
		}
		_, _ = b.admin.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID())
		b.blinked = true
	})
	return ctx
}

func (b *blinkOnRecord) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A delivery attempt whose record meets a connection the database dropped is recorded all the
// same, once, by a try on a fresh connection within the record's budget; a record that had
// committed before the connection dropped is found as such, not taken for a lost lease.
func TestADeliveryAttemptIsRecordedOnceThroughADatabaseBlink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		commitFirst bool
	}{
		{"the record never reached the database", false},
		{"the record committed and its answer was lost", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			url := migrated.NewDB(t)
			admin := dbtest.Pool(t, url)
			blink := &blinkOnRecord{admin: admin, commitFirst: tc.commitFirst}
			pool := dbtest.Pool(t, url, dbtest.Tracer(blink))
			var (
				mu       sync.Mutex
				requests int
			)
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				requests++
				mu.Unlock()
				w.WriteHeader(http.StatusOK)
			}))
			t.Cleanup(rcv.Close)
			require.NoError(t, alerts.AddReceiver(ctx, admin, alerts.NewReceiver{Name: "chat", URL: rcv.URL,
				Format: alerts.FormatSlack}, "test"))
			srv := testfactory.Server(ctx, t, admin, &testfactory.ServerOpts{Slug: "weather"})
			finish(ctx, t, admin, 0, srv, "failed", nil)
			finish(ctx, t, admin, 0, srv, "failed", nil)
			keys, err := queries.PendingDeliveries(ctx, admin, nil, nil, 10)
			require.NoError(t, err)
			require.Len(t, keys, 1)

			res, err := alerts.NewDeliverer(pool, nil).Attempt(ctx, keys[0])
			require.NoError(t, err)
			require.True(t, blink.blinked, "the database blinked under the record")
			require.Equal(t, "delivered", res.State)

			var attempts, recorded int
			var state string
			require.NoError(t, admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM alert_delivery_attempts),
				attempts, state FROM alert_deliveries`).Scan(&recorded, &attempts, &state))
			require.Equal(t, 1, recorded, "the attempt is recorded once")
			require.Equal(t, 1, attempts)
			require.Equal(t, "delivered", state)
			mu.Lock()
			require.Equal(t, 1, requests, "sent once")
			mu.Unlock()
		})
	}
}
