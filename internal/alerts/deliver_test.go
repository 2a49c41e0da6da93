package alerts_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// webhookReceiver is a Standard Webhooks endpoint on loopback: it verifies every request's
// signature with the specification's library, answers 503 to the first fail attempts of each
// webhook-id and 200 after, and records what it took.
type webhookReceiver struct {
	t      *testing.T
	secret string
	fail   int
	srv    *httptest.Server

	mu       sync.Mutex
	attempts map[string]int // by webhook-id
	taken    []alerts.Event // answered 200, in order
	got      chan alerts.Event
}

func newWebhookReceiver(t *testing.T, fail int) *webhookReceiver {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	r := &webhookReceiver{t: t, secret: "whsec_" + base64.StdEncoding.EncodeToString(key), fail: fail,
		attempts: map[string]int{}, got: make(chan alerts.Event, 100)}
	wh, err := standardwebhooks.NewWebhook(r.secret)
	require.NoError(t, err)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := wh.Verify(body, req.Header); err != nil {
			t.Errorf("signature does not verify: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		// And by hand, as the specification defines it, not only through the library that signed.
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(req.Header.Get("webhook-id") + "." + req.Header.Get("webhook-timestamp") + "." + string(body)))
		if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); req.Header.Get("webhook-signature") != want {
			t.Errorf("webhook-signature %q, want %q", req.Header.Get("webhook-signature"), want)
		}
		var ev alerts.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("body: %v", err)
		}
		id := req.Header.Get("webhook-id")
		if id != ev.Data.EventID {
			t.Errorf("webhook-id %s is not the event's id %s", id, ev.Data.EventID)
		}
		r.mu.Lock()
		r.attempts[id]++
		n := r.attempts[id]
		if n > r.fail {
			r.taken = append(r.taken, ev)
		}
		r.mu.Unlock()
		if n <= r.fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		r.got <- ev
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *webhookReceiver) add(ctx context.Context, t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: name, URL: r.srv.URL + "/hook",
		Format: alerts.FormatStandardWebhooks, Secret: []byte(r.secret + "\n")}, "test"))
}

func (r *webhookReceiver) takenIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, len(r.taken))
	for i, e := range r.taken {
		ids[i] = e.Data.EventID
	}
	return ids
}

// leaseRunsOut ends every delivery's lease now: the test does not wait out alerts.Lease.
func leaseRunsOut(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(ctx, `UPDATE alert_deliveries SET lease_until = now() WHERE lease_until IS NOT NULL`)
	require.NoError(t, err)
}

// dueNow makes every pending delivery due now: the test does not wait out the backoff.
func dueNow(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(ctx, `UPDATE alert_deliveries SET next_attempt_at = now() WHERE state = 'pending'`)
	require.NoError(t, err)
}

func TestASignedWebhookIsRetriedUntilTakenWithTheSameIDAndEveryAttemptIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	rcv := newWebhookReceiver(t, 2)
	rcv.add(ctx, t, pool, "oncall")
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather", URL: "https://weather.example/mcp?token=s3cret"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)

	var jobs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'probectl_alert_delivery'
		AND queue = 'probectl_alerts'`).Scan(&jobs))
	require.Equal(t, 1, jobs, "the River job is inserted with the event, in the finish's transaction")

	d := alerts.NewDeliverer(pool, slog.New(slog.DiscardHandler))
	s, err := d.Drain(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, alerts.DrainSummary{Attempts: 1, Pending: 1}, s)
	s, err = d.Drain(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 0, s.Attempts, "the retry waits for its backoff")
	dueNow(ctx, t, pool)
	_, err = d.Drain(ctx, nil)
	require.NoError(t, err)
	dueNow(ctx, t, pool)
	s, err = d.Drain(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, alerts.DrainSummary{Attempts: 1, Delivered: 1}, s)

	finish(ctx, t, pool, 0, srv, "ok", nil) // recovered
	for range 3 {
		dueNow(ctx, t, pool)
		_, err = d.Drain(ctx, nil)
		require.NoError(t, err)
	}
	ids := rcv.takenIDs()
	require.Len(t, ids, 2, "each transition once")
	require.NotEqual(t, ids[0], ids[1])
	require.Equal(t, "server.down", rcv.taken[0].Type)
	require.Equal(t, "https://weather.example/mcp?token=redacted", rcv.taken[0].Data.Server.URL)
	require.Equal(t, "server.recovered", rcv.taken[1].Type)

	var statuses []int32
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(status_code ORDER BY event_id, attempt) FROM alert_delivery_attempts
		WHERE event_id = $1::uuid`, ids[0]).Scan(&statuses))
	require.Equal(t, []int32{503, 503, 200}, statuses)

	list, err := alerts.List(ctx, pool, alerts.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "delivered", list[1].Deliveries[0].State)
	require.Equal(t, 3, list[1].Deliveries[0].Attempts)
}

// A receiver at a metadata address is refused by the Sender's guard before any connection. The
// Sender dials through probe/check's guard, which this package cannot replace with a recording
// dialer, so the test runs in a network namespace of its own where the address is a decoy on
// loopback: had the guard let the request through, it would have reached the decoy, never the
// real endpoint. AddReceiver refuses the address written as such (a name may resolve to it, and
// the release before this one stored it), so the receiver is stored past it.
func TestAReceiverAtAMetadataAddressIsRefusedBeforeAnyConnection(t *testing.T) {
	t.Parallel()
	fakefleet.InNetworkNamespace(t, fakefleet.Namespace{Decoys: []string{"169.254.169.254:80"}, Database: true}, func(t *testing.T, decoys *fakefleet.Decoys) {
		ctx := context.Background()
		pool := migrated.Pool(t)
		imds := alerts.NewReceiver{Name: "imds", URL: "http://169.254.169.254/latest/meta-data/", Format: alerts.FormatAlertmanager}
		require.ErrorContains(t, alerts.AddReceiver(ctx, pool, imds, "test"), "169.254.169.254 is a cloud metadata address")
		_, err := queries.AddReceiver(ctx, pool, queries.ReceiverSecret{Name: imds.Name, URL: imds.URL, Format: imds.Format,
			Events: alerts.EventTypes}, "test")
		require.NoError(t, err)
		ans, _, err := alerts.Test(ctx, pool, alerts.NewSender(), "imds")
		require.Error(t, err)
		require.Contains(t, err.Error(), "metadata")
		require.Zero(t, ans.Status)
		require.Zero(t, decoys.Connections(t), "nothing was sent to the metadata address")
	})
}

func riverClient(t *testing.T, pool *pgxpool.Pool) *river.Client[pgx.Tx] {
	t.Helper()
	workers := river.NewWorkers()
	resend, queue := alerts.River(workers, pool, slog.New(slog.DiscardHandler))
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{alerts.Queue: queue},
		Workers:           workers,
		FetchPollInterval: 100 * time.Millisecond,
		PeriodicJobs:      []*river.PeriodicJob{resend},
		Logger:            slog.New(slog.DiscardHandler),
		TestOnly:          true,
	})
	require.NoError(t, err)
	return c
}

func waitEvent(t *testing.T, ch <-chan alerts.Event, within time.Duration) alerts.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(within):
		t.Fatalf("no event delivered within %s", within)
	}
	return alerts.Event{}
}

// The River path, as `probectl worker` runs it: the job the trigger inserted delivers the event,
// retried after a 503 within 10 s (River's schedule of the retry, read from the failed job's row,
// not a stopwatch). A worker restarted while the server stays down sends nothing again: the next
// thing the receiver gets is the next transition.
func TestTheWorkerDeliversRetriesAndAfterARestartSendsNothingNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	rcv := newWebhookReceiver(t, 1)
	rcv.add(ctx, t, pool, "oncall")
	a := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "a"})
	b := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "b"})
	for _, s := range []int64{a, b} {
		finish(ctx, t, pool, 0, s, "ok", nil)
	}
	finish(ctx, t, pool, 0, a, "failed", nil)
	finish(ctx, t, pool, 0, a, "failed", nil)

	c := riverClient(t, pool)
	failed, unsubscribe := c.Subscribe(river.EventKindJobFailed)
	defer unsubscribe()
	require.NoError(t, c.Start(ctx))
	var job *rivertype.JobRow
	select {
	case e := <-failed:
		job = e.Job
	case <-time.After(20 * time.Second): // only stops a test whose delivery never ran
		t.Fatal("the delivery's first attempt never failed")
	}
	require.Equal(t, alerts.DeliveryArgs{}.Kind(), job.Kind)
	// Retryable, or available at a future scheduled_at when the retry falls within River's
	// scheduler interval: either way scheduled_at is when River runs it again.
	require.Contains(t, []rivertype.JobState{rivertype.JobStateRetryable, rivertype.JobStateAvailable}, job.State)
	require.Len(t, job.Errors, 1)
	retryIn := job.ScheduledAt.Sub(job.Errors[0].At)
	t.Logf("the retry is scheduled %s after the failed attempt began", retryIn)
	require.GreaterOrEqual(t, retryIn, alerts.FirstRetry, "the retry waits the delivery's backoff")
	require.LessOrEqual(t, retryIn, 10*time.Second, "the first retry comes within 10 s of the 503")
	ev := waitEvent(t, rcv.got, 20*time.Second)
	require.Equal(t, "server.down", ev.Type)
	require.NoError(t, c.Stop(ctx))

	// Still down, checked again while no worker runs; then a worker starts again.
	finish(ctx, t, pool, 0, a, "failed", nil)
	c2 := riverClient(t, pool)
	require.NoError(t, c2.Start(ctx))
	t.Cleanup(func() { _ = c2.Stop(context.Background()) })
	finish(ctx, t, pool, 0, a, "failed", nil)
	// The next transition, b going down, is the next thing the receiver takes.
	finish(ctx, t, pool, 0, b, "failed", nil)
	finish(ctx, t, pool, 0, b, "failed", nil)
	ev = waitEvent(t, rcv.got, 20*time.Second)
	require.Equal(t, "server.down", ev.Type)
	require.Equal(t, "b", ev.Data.Server.Slug)
	ids := rcv.takenIDs()
	require.Len(t, ids, 2)
	require.NotEqual(t, ids[0], ids[1])
}

// run round delivers its own round's events before it exits, waiting out a retry.
func TestARoundsEventsAreDeliveredByTheRoundWithinItsBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	rcv := newWebhookReceiver(t, 1)
	rcv.add(ctx, t, pool, "oncall")
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	round := testfactory.Round(ctx, t, pool, nil)
	finish(ctx, t, pool, round, srv, "failed", nil)
	endRound(ctx, t, pool, round)
	other := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "other"})
	finish(ctx, t, pool, 0, other, "failed", nil)
	finish(ctx, t, pool, 0, other, "failed", nil) // not the round's: left for a worker

	s, err := alerts.NewDeliverer(pool, nil).DrainRound(ctx, round, alerts.RoundDeliveryBound)
	require.NoError(t, err)
	require.Equal(t, alerts.DrainSummary{Attempts: 2, Delivered: 1}, s)
	require.Len(t, rcv.takenIDs(), 1)
	require.Equal(t, "weather", rcv.taken[0].Data.Server.Slug)
}

// net/http's errors quote the URL, and a receiver's URL may be its secret: an attempt's error is
// stored and logged without it.
func TestAFailedAttemptsErrorDoesNotHoldTheReceiversURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	addr := closed.URL
	closed.Close()
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "chat",
		URL: addr + "/services/T000/B000/sekrit", Format: alerts.FormatSlack}, "test"))
	srv := testfactory.Server(ctx, t, pool, nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	s, err := alerts.NewDeliverer(pool, nil).Drain(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 1, s.Attempts)
	list, err := alerts.List(ctx, pool, alerts.ListOptions{})
	require.NoError(t, err)
	require.NotNil(t, list[0].Deliveries[0].LastError)
	require.Contains(t, *list[0].Deliveries[0].LastError, "connect")
	require.NotContains(t, *list[0].Deliveries[0].LastError, "sekrit")
}

// A delivery holds no transaction while it waits for the receiver: a slow receiver ties up no
// connection idle in transaction. The receiver looks, while it holds the request, at every other
// session of the test's database.
func TestNoTransactionIsOpenWhileTheReceiverHoldsTheRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	var (
		mu      sync.Mutex
		idleInT []int
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		var n int
		err := pool.QueryRow(r.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			  AND state IN ('idle in transaction', 'idle in transaction (aborted)')`).Scan(&n)
		if err != nil {
			t.Errorf("pg_stat_activity: %v", err)
		}
		mu.Lock()
		idleInT = append(idleInT, n)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "slow", URL: rcv.URL,
		Format: alerts.FormatSlack}, "test"))
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	s, err := alerts.NewDeliverer(pool, nil).Drain(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 1, s.Delivered)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{0}, idleInT, "sessions idle in transaction during the request")
}

// An attempt that outlived its lease records nothing: another deliverer took the delivery when
// the lease ran out, sent it and recorded it; the first attempt's answer, coming after, is not
// recorded over it (its attempt would count twice and its state could overwrite the other's).
func TestAnAttemptThatLostItsLeaseRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	d := alerts.NewDeliverer(pool, nil)
	var (
		mu         sync.Mutex
		requests   int
		second     error
		eventID    string
		receiverID int64
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		requests++
		first := requests == 1
		mu.Unlock()
		if first { // the lease runs out while the receiver holds the first attempt; another takes it
			_, err := pool.Exec(r.Context(), `UPDATE alert_deliveries SET lease_until = now()`)
			if err == nil {
				_, err = d.Attempt(r.Context(), queries.DeliveryKey{EventID: eventID, ReceiverID: receiverID})
			}
			mu.Lock()
			second = err
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "slow", URL: rcv.URL,
		Format: alerts.FormatSlack}, "test"))
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	keys, err := queries.PendingDeliveries(ctx, pool, nil, nil, 10)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	eventID, receiverID = keys[0].EventID, keys[0].ReceiverID
	_, err = d.Attempt(ctx, keys[0])
	require.ErrorIs(t, err, alerts.ErrBusy, "the first attempt lost its lease")
	mu.Lock()
	require.NoError(t, second)
	mu.Unlock()
	var attempts int
	var state string
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM alert_delivery_attempts),
		(SELECT state FROM alert_deliveries)`).Scan(&attempts, &state))
	require.Equal(t, 1, attempts, "only the attempt holding the lease is recorded")
	require.Equal(t, "delivered", state)
}

// A worker that crashed mid-delivery leaves the delivery leased and its River job running, which
// River rescues only after RescueStuckJobsAfter (an hour by default). The periodic re-send job
// (run when a worker starts, then every resend_every) attempts the deliveries whose lease ran out.
func TestTheResendJobDeliversWhatACrashedWorkerLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	rcv := newWebhookReceiver(t, 0)
	rcv.add(ctx, t, pool, "oncall")
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	// What the crash left: the job running, the delivery leased, the lease since run out.
	_, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
		WHERE kind = 'probectl_alert_delivery'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE alert_deliveries SET lease_until = now() - interval '1 second'`)
	require.NoError(t, err)

	c := riverClient(t, pool)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	ev := waitEvent(t, rcv.got, 20*time.Second)
	require.Equal(t, "server.down", ev.Type)
	require.Len(t, rcv.takenIDs(), 1)
}
