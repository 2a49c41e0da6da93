package alerts_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
)

// A worker killed (SIGKILL) in the middle of a delivery, after the receiver has the request and
// before it answers: the attempt was never recorded, the delivery stays leased until its lease
// runs out, and the next deliverer sends the event again with the same webhook-id. The receiver takes each transition exactly once; nothing is invented.
func TestAWorkerKilledMidDeliveryLosesNothingAndInventsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	bin := testfactory.BuildProbectl(t)

	arrived := make(chan struct{})
	var (
		mu    sync.Mutex
		seen  []string // webhook-ids, every request
		taken []string // webhook-ids answered 200
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // read to its end, so that the server notices the client die
		id := r.Header.Get("webhook-id")
		mu.Lock()
		seen = append(seen, id)
		first := len(seen) == 1
		mu.Unlock()
		if first { // hold the first request: it never gets an answer, its sender dies meanwhile
			close(arrived)
			<-r.Context().Done()
			return
		}
		mu.Lock()
		taken = append(taken, id)
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	key := "whsec_" + strings.Repeat("QUJD", 8) // 24 bytes
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "oncall", URL: rcv.URL,
		Format: alerts.FormatStandardWebhooks, Secret: []byte(key)}, "test"))
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)

	env := append(os.Environ(), "PROBECTL_DATABASE_URL="+url)
	worker := exec.Command(bin, "worker", "--unsigned", "--max-workers", "1", "--spool-dir", t.TempDir())
	worker.Env = env
	var logs strings.Builder
	worker.Stderr = &logs
	require.NoError(t, worker.Start())
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		_ = worker.Process.Kill()
		t.Fatalf("the worker never delivered:\n%s", logs.String())
	}
	require.NoError(t, worker.Process.Kill()) // SIGKILL, the delivery leased
	_ = worker.Wait()

	var attempts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM alert_delivery_attempts`).Scan(&attempts))
	require.Zero(t, attempts, "the killed attempt was never recorded")

	// While the lease holds, no one else sends it; once it has run out (the test does not wait
	// alerts.Lease), the next deliverer (here `alerts deliver`, as cron would run it) does.
	cmd := exec.Command(bin, "alerts", "deliver")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	mu.Lock()
	require.Len(t, seen, 1, "the leased delivery is not sent again while its lease holds")
	mu.Unlock()
	leaseRunsOut(ctx, t, pool)
	cmd = exec.Command(bin, "alerts", "deliver")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	finish(ctx, t, pool, 0, srv, "ok", nil) // recovered: the second transition
	cmd = exec.Command(bin, "alerts", "deliver")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, taken, 2, "each transition taken once")
	require.NotEqual(t, taken[0], taken[1])
	require.Equal(t, seen[0], taken[0], "the retry after the kill carries the same webhook-id")
}

// A worker killed (SIGKILL) mid-delivery leaves its River job running, which River rescues only
// after RescueStuckJobsAfter (16 min). The next worker's re-send job attempts the delivery once its
// lease has run out; when that attempt fails too (the receiver answers 503), it schedules the
// delivery's next attempt itself, in the transaction that records the failure, so the event is
// delivered at its backoff (5 s), not after the rescue: the killed worker's job is still running
// when it arrives.
func TestAFailedAttemptAtACrashedDeliveryIsRetriedWithoutWaitingForTheRescue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	bin := testfactory.BuildProbectl(t)

	arrived := make(chan struct{})
	taken := make(chan string, 10)
	var (
		mu   sync.Mutex
		seen []string // webhook-ids, every request
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		seen = append(seen, id)
		n := len(seen)
		mu.Unlock()
		switch n {
		case 1: // held: its sender dies meanwhile
			close(arrived)
			<-r.Context().Done()
		case 2: // the re-send job's attempt fails too
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			taken <- id
		}
	}))
	t.Cleanup(rcv.Close)
	key := "whsec_" + strings.Repeat("QUJD", 8)
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "oncall", URL: rcv.URL,
		Format: alerts.FormatStandardWebhooks, Secret: []byte(key)}, "test"))
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)

	env := append(os.Environ(), "PROBECTL_DATABASE_URL="+url)
	startWorker := func() (*exec.Cmd, *strings.Builder) {
		w := exec.Command(bin, "worker", "--unsigned", "--max-workers", "1", "--spool-dir", t.TempDir())
		w.Env = env
		logs := &strings.Builder{}
		w.Stderr = logs
		require.NoError(t, w.Start())
		return w, logs
	}
	first, logs := startWorker()
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		_ = first.Process.Kill()
		t.Fatalf("the worker never delivered:\n%s", logs.String())
	}
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	leaseRunsOut(ctx, t, pool)
	var killed int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM river_job
		WHERE kind = 'probectl_alert_delivery' AND state = 'running'`).Scan(&killed))

	second, logs := startWorker()
	t.Cleanup(func() {
		_ = second.Process.Kill()
		_ = second.Wait()
	})
	var id string
	select {
	case id = <-taken:
	case <-time.After(60 * time.Second):
		t.Fatalf("the event was not delivered after the re-send job's failed attempt:\n%s", logs.String())
	}
	mu.Lock()
	require.Equal(t, []string{id, id, id}, seen, "one event, the same webhook-id on every attempt")
	mu.Unlock()
	var state string
	require.NoError(t, pool.QueryRow(ctx, `SELECT state FROM river_job WHERE id = $1`, killed).Scan(&state))
	require.Equal(t, "running", state, "the killed worker's job is not rescued yet: the delivery did not wait for it")
}
