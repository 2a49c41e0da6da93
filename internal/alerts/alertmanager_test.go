package alerts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/testfactory"
)

// alertmanagerBinary finds Debian's prometheus-alertmanager (or an alertmanager on PATH). Without
// it the test says so and skips, unless PROBECTL_REQUIRE_ALERTMANAGER=1 (as .ci/run sets).
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "Alertmanager not found (Debian: apt-get install prometheus-alertmanager): the real-Alertmanager test did not run"
	if os.Getenv("PROBECTL_REQUIRE_ALERTMANAGER") == "1" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
	return ""
}

const resolveTimeout = 3 * time.Second

// startAlertmanager runs Alertmanager on loopback with a temporary configuration whose
// resolve_timeout is resolveTimeout, and returns its base URL once it is ready.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	bin := alertmanagerBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  resolve_timeout: %s
route:
  receiver: blackhole
  group_wait: 1s
receivers:
  - name: blackhole
`, resolveTimeout)), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("alertmanager:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		require.True(t, time.Now().Before(deadline), "alertmanager not ready in 30 s: %v", err)
		time.Sleep(100 * time.Millisecond) // polling a process we do not control
	}
}

type amGot struct {
	Labels   map[string]string `json:"labels"`
	EndsAt   time.Time         `json:"endsAt"`
	StartsAt time.Time         `json:"startsAt"`
	Status   struct {
		State string `json:"state"`
	} `json:"status"`
	Annotations map[string]string `json:"annotations"`
}

// firing returns Alertmanager's alert for server slug if it is active now.
func firing(t *testing.T, base, slug string) *amGot {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts?filter=alertname%3D%22ProbectlServerDown%22")
	require.NoError(t, err)
	defer resp.Body.Close()
	var got []amGot
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	for _, a := range got {
		if a.Labels["server"] == slug && a.Status.State == "active" && a.EndsAt.After(time.Now()) {
			return &a
		}
	}
	return nil
}

// A real Alertmanager receives the down alert, shows it, keeps it firing across twice its
// resolve_timeout because the worker's periodic job sends it again every resend_every, and
// resolves it when the server recovers.
func TestARealAlertmanagerKeepsTheDownAlertFiringAndResolvesItOnRecovery(t *testing.T) {
	t.Parallel()
	base := startAlertmanager(t)
	ctx := context.Background()
	pool := migrated.Pool(t)
	resend := time.Second
	_, _, err := alerts.SetPolicy(ctx, pool, alerts.PolicyChange{ResendEvery: &resend, By: "test"}, false)
	require.NoError(t, err)
	require.NoError(t, alerts.AddReceiver(ctx, pool, alerts.NewReceiver{Name: "am", URL: base,
		Format: alerts.FormatAlertmanager}, "test"))
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather", Kind: "mcp", Plan: "frequent"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	f1 := finish(ctx, t, pool, 0, srv, "failed", nil)
	f2 := finish(ctx, t, pool, 0, srv, "failed", nil)

	c := riverClient(t, pool)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })

	deadline := time.Now().Add(20 * time.Second)
	var a *amGot
	for a == nil {
		require.True(t, time.Now().Before(deadline), "the down alert never showed in GET /api/v2/alerts")
		time.Sleep(200 * time.Millisecond)
		a = firing(t, base, "weather")
	}
	require.Equal(t, map[string]string{"alertname": "ProbectlServerDown", "server": "weather", "kind": "mcp",
		"plan": "frequent"}, a.Labels)
	require.Equal(t, fmt.Sprintf("%d,%d", f1, f2), a.Annotations["runs"])

	// Twice resolve_timeout with the server still down: the alert stays active throughout.
	until := time.Now().Add(2*resolveTimeout + time.Second)
	for time.Now().Before(until) {
		require.NotNil(t, firing(t, base, "weather"), "the alert resolved while the server was still down")
		time.Sleep(250 * time.Millisecond)
	}

	finish(ctx, t, pool, 0, srv, "ok", nil) // recovered
	deadline = time.Now().Add(20 * time.Second)
	for firing(t, base, "weather") != nil {
		require.True(t, time.Now().Before(deadline), "the alert was not resolved on recovery")
		time.Sleep(200 * time.Millisecond)
	}
}
