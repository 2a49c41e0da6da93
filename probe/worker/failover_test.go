package worker_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/pgha"
	"github.com/probectl/probectl/internal/testfactory"
)

// roundProc is one `probectl run round` process.
type roundProc struct {
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	log  strings.Builder
}

// startRound starts `run round` on url; an env of libpq's PG* variables stands for the URL when
// url is "".
func startRound(t *testing.T, bin, url, spool string, env []string, args ...string) *roundProc {
	t.Helper()
	args = append([]string{"run", "round", "--unsigned", "--allow-private-targets", "-q", "--spool-dir", spool,
		"--fanout", "1", "--claim-limit", "20", "--concurrency", "20"}, args...)
	p := &roundProc{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	if url != "" {
		p.cmd.Env = append(p.cmd.Env, "PROBECTL_DATABASE_URL="+url)
	}
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	p.cmd.Stdout = p.cmd.Stderr
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
		p.mu.Lock()
		t.Logf("run round %d:\n%s", p.cmd.Process.Pid, p.log.String())
		p.mu.Unlock()
	})
	return p
}

func (p *roundProc) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(within):
		t.Fatalf("run round %d did not end within %s", p.cmd.Process.Pid, within)
		return nil
	}
}

// gatedFleet answers every server, but holds each request until release is called: the checks of
// a round are all in flight when the test kills the database.
func gatedFleet(t *testing.T) (*fakefleet.Fleet, func()) {
	gate := make(chan struct{})
	var once sync.Once
	f := fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		fakefleet.OK(w, r)
	}))
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return f, release
}

// A primary with a synchronous standby is killed with SIGKILL while two `run round` processes on
// a multi-host URL have every check of their round in flight, and the standby is promoted. Counted
// at the fleet and on the new primary: no result is lost, no server is checked twice, and a new
// round runs within 30 s of the promotion, all without restarting anything but the database.
func TestFailoverToASynchronousStandbyMidRoundLosesNothingAndChecksNoServerTwice(t *testing.T) {
	const n = 30
	ctx := context.Background()
	pair, err := pgha.Start(ctx, pgha.Options{Synchronous: true, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Stop() })
	url := pair.MultiHostURL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	db, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	fleet, release := gatedFleet(t)
	fleet.AddServers(t, db, n, "", testfactory.ServerOpts{Kind: "http"})
	bin := buildBinary(t)

	spool := filepath.Join(t.TempDir(), "spool")
	rounds := []*roundProc{startRound(t, bin, url, spool, nil), startRound(t, bin, url, spool, nil)}
	eventually(t, "every server's check in flight", 60*time.Second, func() bool { return fleet.Hits() >= n })

	require.NoError(t, pair.KillPrimary())
	release()
	require.NoError(t, pair.Promote(ctx))
	promoted := time.Now()
	db.Reset() // the test's own connections went with the primary
	for _, r := range rounds {
		require.NoError(t, r.wait(t, 90*time.Second), "the round finished its checks on the new primary")
	}

	// A new round, after the promotion, on the same servers named by libpq's variables
	// (PGHOST=h1,h2): it stores what waited (nothing should) and checks a server made due after
	// the failover.
	testfactory.Server(ctx, t, db, &testfactory.ServerOpts{Slug: "after-failover", URL: fleet.ServerURL(n), Kind: "http",
		NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Minute))})
	next := startRound(t, bin, "", spool, []string{"PGHOST=127.0.0.1,127.0.0.1",
		fmt.Sprintf("PGPORT=%d,%d", pair.Primary.Port(), pair.StandbyPort()), "PGUSER=postgres", "PGDATABASE=postgres",
		"PGSSLMODE=disable", "PGTARGETSESSIONATTRS=read-write", "PGCONNECT_TIMEOUT=2"})
	require.NoError(t, next.wait(t, 60*time.Second))
	resumed := time.Since(promoted)
	t.Logf("a new round had run %s after the promotion", resumed)
	require.Less(t, resumed, 30*time.Second)

	var jobs, runs, open int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*), count(r.id), count(*) FILTER (WHERE j.finished_at IS NULL)
	  FROM probe_jobs j LEFT JOIN probe_runs r ON r.job_id = j.id`).Scan(&jobs, &runs, &open))
	t.Logf("after the failover: %d jobs, %d runs, %d open, %d requests at the fleet", jobs, runs, open, fleet.Hits())
	require.Equal(t, n+1, jobs, "one job per server")
	require.Equal(t, n+1, runs, "no result lost")
	require.Zero(t, open)
	for path, at := range fleet.Arrivals() {
		require.Len(t, at, 1, "%s was checked more than once", path)
	}
	require.Len(t, fleet.Arrivals(), n+1)
}
