package alerts_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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
	bin := filepath.Join(t.TempDir(), "probectl")
	out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "github.com/probectl/probectl/cmd/probectl").CombinedOutput()
	require.NoError(t, err, "%s", out)

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
	out, err = cmd.CombinedOutput()
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
