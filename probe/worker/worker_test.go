package worker_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/pglaunch"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("worker_tmpl", testfactory.Migrate)

// buildBinary builds probectl for the test: the workers are real processes (testfactory.BuildProbectl).
func buildBinary(t *testing.T) string { return testfactory.BuildProbectl(t) }

// proc is one worker process; its stderr (logs) is kept for the failure message.
type proc struct {
	cmd   *exec.Cmd
	spool string // its --spool-dir
	done  chan error
	mu    sync.Mutex
	log   strings.Builder
}

func startWorker(t *testing.T, bin, url string, args ...string) *proc {
	t.Helper()
	spool := filepath.Join(t.TempDir(), "spool")
	args = append([]string{"worker", "--unsigned", "--allow-private-targets", "--max-workers", "4",
		"--spool-dir", spool}, args...)
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan error, 1), spool: spool}
	p.cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("worker %d:\n%s", p.cmd.Process.Pid, p.log.String())
			p.mu.Unlock()
		}
	})
	return p
}

// eventually polls cond (a read of the database, which is what the workers synchronise on) until
// it holds or the deadline passes.
func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func queryInt(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// leaderMidRound finds the leader when it is running an invocation that has open jobs.
const leaderMidRound = `
SELECT l.leader_id
  FROM river_leader l
  JOIN river_job j ON j.state = 'running' AND j.kind = 'probectl_invocation'
                  AND j.attempted_by[array_length(j.attempted_by, 1)] = l.leader_id
 WHERE EXISTS (SELECT 1 FROM probe_jobs pj
                WHERE pj.finished_at IS NULL AND pj.round_id = (j.args ->> 'round_id')::bigint
                  AND pj.invocation = (j.args ->> 'invocation')::int)
 LIMIT 1`

// openElsewhere counts open jobs of invocations the dead leader ($1) did not run last.
const openElsewhere = `
SELECT count(*)::int
  FROM probe_jobs pj
 WHERE pj.finished_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM river_job j
                    WHERE j.kind = 'probectl_invocation'
                      AND (j.args ->> 'round_id')::bigint = pj.round_id
                      AND (j.args ->> 'invocation')::int = pj.invocation
                      AND j.attempted_by[array_length(j.attempted_by, 1)] = $1)`

// midRoundAfter finds a round started after $1 with an invocation running that holds open jobs.
const midRoundAfter = `
SELECT count(*)::int
  FROM river_job j
  JOIN probe_rounds r ON r.id = (j.args ->> 'round_id')::bigint AND r.started_at > $1
 WHERE j.state = 'running' AND j.kind = 'probectl_invocation'
   AND EXISTS (SELECT 1 FROM probe_jobs pj
                WHERE pj.finished_at IS NULL AND pj.round_id = r.id
                  AND pj.invocation = (j.args ->> 'invocation')::int)`

// ownCluster starts a PostgreSQL of the test's own, migrated: the test restarts it, which the
// shared test cluster must never see.
func ownCluster(t *testing.T) (*pglaunch.Cluster, string) {
	t.Helper()
	ctx := context.Background()
	cl, err := pglaunch.Start(ctx, pglaunch.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Stop() })
	url := cl.URL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	return cl, url
}

// TestThreeWorkersKeepRoundsComingWhenTheLeaderIsKilledAndPostgresRestarts runs three worker
// processes on one database with a round every 5 seconds, kills the leader with -9 while a round
// runs, then restarts PostgreSQL (every session cut) while a later round runs, and checks that
// rounds keep coming, that every server is checked or held by the dead worker's open jobs, that no
// server is checked twice, that every check made is stored, and that the survivors stop cleanly
// on SIGTERM.
func TestThreeWorkersKeepRoundsComingWhenTheLeaderIsKilledAndPostgresRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL and three processes, and runs for about a minute")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	cl, url := ownCluster(t)
	pool := dbtest.Pool(t, url)

	// The fleet answers after a second, so a round lasts long enough to be killed midway.
	fleet := fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(time.Second)
		_, _ = io.WriteString(w, "ok")
	}))
	const servers = 48
	fleet.AddServers(t, pool, servers, "w", testfactory.ServerOpts{Plan: "frequent", NextCheckAt: testfactory.Ptr(time.Now())})
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 2, 4, 2
	rs.RequestTimeout, rs.MaxDuration = settings.Duration(time.Second), settings.Duration(5*time.Second)
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: 5 * time.Second, Actor: "test"})
	require.NoError(t, err)

	// The first worker starts alone, so it leads and runs the first round's invocations; the
	// two others join, and the leader is killed while it still holds open jobs (River records
	// which worker attempts a job; worker ids end in the pid).
	procs := map[int]*proc{}
	first := startWorker(t, bin, url)
	procs[first.cmd.Process.Pid] = first
	var leaderID string
	eventually(t, "the leader running an invocation with open jobs", 2*time.Minute, func() bool {
		err := pool.QueryRow(ctx, leaderMidRound).Scan(&leaderID)
		return err == nil
	})
	for range 2 {
		p := startWorker(t, bin, url)
		procs[p.cmd.Process.Pid] = p
	}
	pid, err := strconv.Atoi(leaderID[strings.LastIndex(leaderID, "-")+1:])
	require.NoError(t, err, "leader id %q", leaderID)
	leader := procs[pid]
	require.NotNil(t, leader, "leader %q is one of our workers", leaderID)
	require.NoError(t, leader.cmd.Process.Signal(syscall.SIGKILL))
	<-leader.done
	delete(procs, pid)
	killedAt := time.Now()
	roundsAtKill := queryInt(t, pool, "SELECT count(*)::int FROM probe_rounds")
	t.Logf("killed leader %s with %d round(s) started", leaderID, roundsAtKill)

	// A later round, run by the survivors, is cut mid-way by a restart of PostgreSQL.
	eventually(t, "a round after the kill running an invocation with open jobs", 2*time.Minute, func() bool {
		return queryInt(t, pool, midRoundAfter, killedAt) > 0
	})
	require.NoError(t, cl.Shutdown())
	require.NoError(t, cl.Resume(ctx))
	pool.Reset() // the test's own connections were cut too
	restartedAt := time.Now()
	t.Logf("restarted PostgreSQL mid-round")

	// Rounds keep coming until no server is due any more, and the last of them finishes.
	eventually(t, "every server checked or held by the dead worker", 3*time.Minute, func() bool {
		return queryInt(t, pool, "SELECT count(*)::int FROM servers WHERE next_check_at <= now() AND NOT EXISTS "+
			"(SELECT 1 FROM probe_jobs j WHERE j.server_id = servers.id)") == 0 &&
			queryInt(t, pool, "SELECT count(*)::int FROM probe_rounds WHERE finished_at IS NULL AND started_at > $1", killedAt) == 0 &&
			queryInt(t, pool, "SELECT count(*)::int FROM probe_rounds WHERE started_at > $1", restartedAt) > 0
	})
	rounds := queryInt(t, pool, "SELECT count(*)::int FROM probe_rounds")
	require.Greater(t, rounds, roundsAtKill, "rounds kept coming after the leader died")

	// Nothing checked twice, nothing lost: one job per server; each has its run, or is open
	// (held by the dead worker until the in-flight window ends, as status and audit open show).
	rep, err := audit.Duplicates(ctx, pool, audit.DuplicatesParams{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Empty(t, rep.Pairs, "no server checked twice")
	require.Equal(t, servers, queryInt(t, pool, "SELECT count(DISTINCT server_id)::int FROM probe_jobs"))
	require.Equal(t, servers, queryInt(t, pool, "SELECT count(*)::int FROM probe_jobs"))
	open := queryInt(t, pool, "SELECT count(*)::int FROM probe_jobs WHERE finished_at IS NULL")
	require.Equal(t, servers-open, queryInt(t, pool,
		"SELECT count(*)::int FROM probe_runs r JOIN probe_jobs j ON j.id = r.job_id WHERE j.finished_at IS NOT NULL"))
	require.Positive(t, open, "the leader was killed with checks in flight")
	require.Zero(t, queryInt(t, pool, openElsewhere, leaderID), "only the dead leader's invocations leave jobs open")
	t.Logf("%d rounds, %d servers checked, %d jobs left open by the killed leader", rounds, servers-open, open)

	// SIGTERM: the survivors stop and exit 0 within 30 seconds.
	for pid := range procs {
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, line := range strings.Split(string(st), "\n") {
				if strings.HasPrefix(line, "VmHWM:") {
					t.Logf("worker %d peak RSS %s", pid, strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
				}
			}
		}
	}
	for _, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for pid, p := range procs {
		select {
		case err := <-p.done:
			require.NoError(t, err, "worker %d exits 0 on SIGTERM", pid)
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %d still running 30 s after SIGTERM", pid)
		}
		sp, err := probe.InspectSpool(p.spool)
		require.NoError(t, err)
		require.Zero(t, sp.Results, "worker %d left results in its spool", pid)
	}
}
