package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// SIGHUP (the terminal closed, a tmux or ssh session ended) stops `run round` and `worker` as
// SIGTERM does: the checks in flight are stored, and the process exits with its usual code. Before,
// SIGHUP's default action killed the process at once: servers had been contacted and nothing was
// stored. The fleet's handlers say when a request arrived, so the test signals only once every
// check is in flight.
func TestSighupStopsLikeSigterm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts probectl processes")
	}
	bin := buildBinary(t)

	t.Run("run round: the checks it stopped are stored as interrupted, exit 3", func(t *testing.T) {
		ctx := context.Background()
		url := migrated.NewDB(t)
		pool := dbtest.Pool(t, url)
		arrived := make(chan struct{}, 8)
		fleet := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			<-r.Context().Done() // never answers: only the round's stop ends the check
		}))
		t.Cleanup(fleet.Close)
		for i := range 3 {
			testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: fmt.Sprintf("%s/%d", fleet.URL, i)})
		}
		cmd := exec.Command(bin, "run", "round", "--unsigned", "--allow-private-targets", "--fanout", "0",
			"--claim-limit", "3", "--concurrency", "3", "--spool-dir", filepath.Join(t.TempDir(), "spool"), "-o", "json")
		cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		for range 3 {
			select {
			case <-arrived:
			case err := <-done:
				t.Fatalf("the round ended before its checks were in flight: %v\n%s", err, stderr.String())
			case <-time.After(2 * time.Minute):
				t.Fatal("the three checks did not reach the fleet")
			}
		}

		require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("still running a minute after SIGHUP\n%s", stderr.String())
		}
		var exitErr *exec.ExitError
		require.True(t, errors.As(err, &exitErr), "exits on its own: %v", err)
		require.Equal(t, 3, exitErr.ExitCode(), "exit 3 as for SIGTERM (a round stopped midway), not killed by the signal: %v\n%s",
			exitErr, stderr.String())
		var sum struct {
			Interrupted bool `json:"interrupted"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout.String()), &sum), stdout.String())
		require.True(t, sum.Interrupted, "the summary says the round was interrupted")
		require.Equal(t, 3, queryInt(t, pool, `SELECT count(*) FROM probe_runs r JOIN probe_jobs j ON j.id = r.job_id
		                                        WHERE j.outcome = 'error' AND r.result ->> 'summary' = 'interrupted'`),
			"every check in flight is stored, as interrupted")
	})

	t.Run("worker: the checks in flight end and are stored, exit 0", func(t *testing.T) {
		ctx := context.Background()
		url := migrated.NewDB(t)
		pool := dbtest.Pool(t, url)
		arrived, answer := make(chan struct{}, 8), make(chan struct{})
		fleet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			arrived <- struct{}{}
			<-answer // answers once the test has signalled, inside the worker's grace
			_, _ = io.WriteString(w, "ok")
		}))
		t.Cleanup(fleet.Close)
		t.Cleanup(func() {
			select {
			case <-answer:
			default:
				close(answer)
			}
		})
		for i := range 2 {
			testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: fmt.Sprintf("%s/%d", fleet.URL, i)})
		}
		rs := settings.Default().Carried
		rs.Fanout, rs.ClaimLimit, rs.Concurrency = 0, 2, 2
		_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Actor: "test"})
		require.NoError(t, err)

		w := startWorker(t, bin, url)
		round, err := strconv.ParseInt(strings.TrimSpace(probectl(t, bin, url, "run", "round", "--via-queue", "--unsigned")), 10, 64)
		require.NoError(t, err)
		for range 2 {
			select {
			case <-arrived:
			case err := <-w.done:
				t.Fatalf("the worker exited before its checks were in flight: %v", err)
			case <-time.After(2 * time.Minute):
				t.Fatal("the two checks did not reach the fleet")
			}
		}

		require.NoError(t, w.cmd.Process.Signal(syscall.SIGHUP))
		close(answer)
		select {
		case err := <-w.done:
			require.NoError(t, err, "exit 0 on SIGHUP, as on SIGTERM, not killed by the signal")
		case <-time.After(30 * time.Second):
			t.Fatal("still running 30 s after SIGHUP")
		}
		require.Equal(t, 2, queryInt(t, pool, `SELECT count(*) FROM probe_runs r JOIN probe_jobs j ON j.id = r.job_id
		                                        WHERE j.round_id = $1 AND j.outcome = 'ok'`, round),
			"both checks in flight are stored")
	})
}
