package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// TestRoundsResumeOnceAWorkerKilledWithSIGKILLIsJudgedDead: a worker running an invocation at the
// default request timeout and time budget (its job's timeout is minutes long) is killed with -9
// while its checks are in flight. River keeps its job 'running' until it rescues it, long after;
// the schedule (a round every 5 s) treats the invocation as dead once its worker's heartbeat is
// older than the rule that judges rounds and workers dead (queries.RoundDeadAfter), and the
// surviving worker starts rounds again. Judged by the database's clock, not a stopwatch: the first
// new round started after the dead worker's last heartbeat had aged past the rule, within a few
// of the schedule's periods of that, and before the dead invocation's own timeout, with River
// still holding its job as running. Nothing is lost: the dead worker's jobs stay open, and no
// later round claims their servers while their lease runs.
func TestRoundsResumeOnceAWorkerKilledWithSIGKILLIsJudgedDead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two worker processes and waits out a dead worker's heartbeat (about 70 s)")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)

	arrived := make(chan string, 16)
	fleet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- r.URL.Path:
		default:
		}
		<-r.Context().Done() // never answers: the checks are in flight when the worker dies
	}))
	t.Cleanup(fleet.Close)
	const servers = 2
	for i := range servers {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("stuck-%d", i),
			URL: fmt.Sprintf("%s/%d", fleet.URL, i)})
	}
	rs := settings.Default().Carried // the default request timeout and time budget
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 0, servers, servers
	const every = 5 * time.Second // the schedule's period: a round is due this long after the last began
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: every, Actor: "test"})
	require.NoError(t, err)

	doomed := startWorker(t, bin, url)
	for range servers {
		select {
		case <-arrived:
		case err := <-doomed.done:
			t.Fatalf("the worker exited before its checks were in flight: %v", err)
		case <-time.After(2 * time.Minute):
			t.Fatal("the checks did not reach the fleet")
		}
	}
	survivor := startWorker(t, bin, url)
	t.Cleanup(func() {
		_ = survivor.cmd.Process.Signal(syscall.SIGTERM)
		<-survivor.done
	})
	eventually(t, "the second worker's heartbeat", time.Minute, func() bool {
		return queryInt(t, pool, "SELECT count(*)::int FROM probectl_workers WHERE pid = $1", survivor.cmd.Process.Pid) == 1
	})
	var worstCase float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT (args ->> 'timeout_seconds')::float8 FROM river_job
	                                        WHERE kind = 'probectl_invocation' AND state = 'running'`).Scan(&worstCase))
	require.Greater(t, worstCase, 3*queries.RoundDeadAfter.Seconds(), "the invocation's own timeout is minutes long")
	lastRound := queryInt(t, pool, "SELECT coalesce(max(id), 0)::int FROM probe_rounds")
	jobsBefore := queryInt(t, pool, "SELECT coalesce(max(id), 0)::int FROM river_job")

	require.NoError(t, doomed.cmd.Process.Signal(syscall.SIGKILL))
	<-doomed.done
	killedAt := time.Now()

	// The bound only stops a test whose schedule never resumes: past the invocation's own
	// timeout, a new round would prove nothing.
	eventually(t, "a round started after the kill", time.Duration(worstCase*float64(time.Second)), func() bool {
		return queryInt(t, pool, "SELECT count(*)::int FROM probe_rounds WHERE id > $1", lastRound) > 0
	})
	t.Logf("rounds resumed %s after kill -9 (the dead invocation's own timeout: %.0f s)",
		time.Since(killedAt).Round(100*time.Millisecond), worstCase)
	var afterHeartbeat, beforeTimeout time.Duration
	require.NoError(t, pool.QueryRow(ctx, `
		WITH resumed AS (SELECT min(started_at) AS at FROM probe_rounds WHERE id > $1)
		SELECT (SELECT at FROM resumed) - w.heartbeat_at,
		       j.attempted_at + make_interval(secs => (j.args ->> 'timeout_seconds')::float8) - (SELECT at FROM resumed)
		  FROM probectl_workers w, river_job j
		 WHERE w.pid = $2 AND j.kind = 'probectl_invocation' AND j.state = 'running' AND j.id <= $3
		   AND j.attempted_by[array_length(j.attempted_by, 1)] = w.id`,
		lastRound, doomed.cmd.Process.Pid, jobsBefore).Scan(&afterHeartbeat, &beforeTimeout))
	t.Logf("the first new round started %s after the dead worker's last heartbeat, %s before its invocation's own timeout",
		afterHeartbeat.Round(100*time.Millisecond), beforeTimeout.Round(100*time.Millisecond))
	require.GreaterOrEqual(t, afterHeartbeat, queries.RoundDeadAfter, "the worker was judged dead by its heartbeat's age")
	// And promptly: the last round began long before, so a round is due as soon as the dead one is
	// judged so, at the leader's next tick (every second); a few of the schedule's periods is the
	// bound, where the wait above only stops a hang.
	require.LessOrEqual(t, afterHeartbeat-queries.RoundDeadAfter, 3*every,
		"the first new round began within a few of the schedule's periods of the worker being judged dead")
	require.Positive(t, beforeTimeout, "the schedule did not wait for the dead invocation's own timeout")

	// Nothing lost: the dead worker's claims stay open, visibly, until their lease ends; no round
	// since claimed their servers.
	require.Equal(t, servers, queryInt(t, pool, "SELECT count(*)::int FROM probe_jobs WHERE finished_at IS NULL"))
	require.Equal(t, servers, queryInt(t, pool, "SELECT count(*)::int FROM probe_jobs"))
	// (The new round's own invocations, queued after the kill, may be running on the survivor.)
	require.Equal(t, 1, queryInt(t, pool,
		"SELECT count(*)::int FROM river_job WHERE kind = 'probectl_invocation' AND state = 'running' AND id <= $1", jobsBefore),
		"River still holds the dead worker's invocation as running")
}
