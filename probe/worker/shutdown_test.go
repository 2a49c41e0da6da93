package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// probectl runs the binary against url and returns its stdout; it must exit 0.
func probectl(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "probectl %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// SIGTERM with checks in flight: the worker fetches no more invocations, lets the checks that
// end within 10 s end (stored as they are), cancels the rest (stored as interrupted, at
// probectl's fault), and exits 0 within 30 s. The fleet's handlers block, and say when a request
// arrived, so the test knows every check is in flight before it signals.
func TestSigtermLetsChecksInFlightEndThenStoresTheRestAsInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process and waits out its 10 s grace")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)

	arrived, answer := make(chan string, 8), make(chan struct{})
	fleet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			<-answer // answers once the test says so, within the grace
			_, _ = io.WriteString(w, "ok")
			return
		}
		<-r.Context().Done() // stuck: never answers
	}))
	t.Cleanup(fleet.Close)
	t.Cleanup(func() {
		select {
		case <-answer:
		default:
			close(answer)
		}
	})
	for _, path := range []string{"slow/0", "slow/1", "stuck/0", "stuck/1"} {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: strings.ReplaceAll(path, "/", "-"),
			URL: fleet.URL + "/" + path})
	}
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 1, 4, 4
	rs.RequestTimeout, rs.MaxDuration = settings.Duration(50*time.Second), settings.Duration(2*time.Minute) // the stuck checks outlast the grace
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Actor: "test"})
	require.NoError(t, err)

	// One invocation at a time: the round's first takes all four servers, its second waits.
	w := startWorker(t, bin, url, "--max-workers", "1")
	round, err := strconv.ParseInt(strings.TrimSpace(probectl(t, bin, url, "run", "round", "--via-queue", "--unsigned")), 10, 64)
	require.NoError(t, err)
	for range 4 {
		select {
		case <-arrived:
		case err := <-w.done:
			t.Fatalf("the worker exited before its checks were in flight: %v", err)
		case <-time.After(2 * time.Minute):
			t.Fatal("the four checks did not reach the fleet")
		}
	}

	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	signalled := time.Now()
	close(answer) // the slow servers answer now, inside the grace
	select {
	case err := <-w.done:
		require.NoError(t, err, "exit 0 on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after SIGTERM")
	}
	t.Logf("exited %s after SIGTERM", time.Since(signalled).Round(100*time.Millisecond))

	type stored struct{ outcome, summary, fault string }
	got := map[string]stored{}
	rows, err := pool.Query(ctx, `SELECT s.slug, j.outcome, r.result ->> 'summary', coalesce(r.result ->> 'fault', '')
	                                FROM probe_jobs j JOIN servers s ON s.id = j.server_id
	                                JOIN probe_runs r ON r.job_id = j.id
	                               WHERE j.round_id = $1`, round)
	require.NoError(t, err)
	for rows.Next() {
		var slug string
		var s stored
		require.NoError(t, rows.Scan(&slug, &s.outcome, &s.summary, &s.fault))
		got[slug] = s
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, 4, "every check in flight is stored")
	for _, slug := range []string{"slow-0", "slow-1"} {
		require.Equal(t, "ok", got[slug].outcome, "%s answered within the grace", slug)
	}
	for _, slug := range []string{"stuck-0", "stuck-1"} {
		require.Equal(t, stored{"error", "interrupted", "probectl"}, got[slug], "%s was cancelled after the grace", slug)
	}
	// River puts the invocation it stopped back in the queue, as not attempted (its next run
	// claims only what is due); the one that waited was never fetched.
	type job struct {
		State     string `db:"state"`
		Attempt   int    `db:"attempt"`
		Attempted bool   `db:"attempted"`
	}
	rows, err = pool.Query(ctx, `SELECT state, attempt, attempted_at IS NOT NULL AS attempted FROM river_job
	                              WHERE kind = 'probectl_invocation' ORDER BY (args ->> 'invocation')::int`)
	require.NoError(t, err)
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByName[job])
	require.NoError(t, err)
	require.Equal(t, []job{{"available", 0, true}, {"available", 0, false}}, jobs,
		"the stopped invocation is queued again; the waiting one was not fetched after SIGTERM")
}

// run round --via-queue --wait queues the round, waits for the workers and prints the usual
// summary.
func TestRunRoundViaQueueWaitPrintsTheUsualSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	fleet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(fleet.Close)
	for i := range 3 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: fmt.Sprintf("%s/%d", fleet.URL, i)})
	}
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 1, 2, 2
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Actor: "test"})
	require.NoError(t, err)
	w := startWorker(t, bin, url)
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		<-w.done
	})

	var sum struct {
		RoundID     int64 `json:"round_id"`
		Invocations int   `json:"invocations"`
		Jobs        int   `json:"jobs"`
		Runs        int   `json:"runs"`
		Servers     int   `json:"servers"`
		OK          int   `json:"ok"`
		OpenJobs    int   `json:"open_jobs"`
	}
	out := probectl(t, bin, url, "run", "round", "--via-queue", "--wait", "--unsigned", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.NotZero(t, sum.RoundID)
	sum.RoundID = 0
	require.Equal(t, struct {
		RoundID     int64 `json:"round_id"`
		Invocations int   `json:"invocations"`
		Jobs        int   `json:"jobs"`
		Runs        int   `json:"runs"`
		Servers     int   `json:"servers"`
		OK          int   `json:"ok"`
		OpenJobs    int   `json:"open_jobs"`
	}{Invocations: 2, Jobs: 3, Runs: 3, Servers: 3, OK: 3}, sum)

	// The table, of a round that finds nothing due: the servers were checked just now.
	table := probectl(t, bin, url, "run", "round", "--via-queue", "--wait", "--unsigned")
	require.Regexp(t, `(?m)^ROUND +INVOCATIONS +JOBS +RUNS +SERVERS +OK +FAILED +ERRORS +OPEN JOBS +DURATION\n\d+ +2 +0 +0 +0 +0 +0 +0 +0 `, table)
	require.Contains(t, table, "manual round, version dev: fan-out 1, claim limit 2, concurrency 2")
}
