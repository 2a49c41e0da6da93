package worker_test

import (
	"bufio"
	"context"
	"fmt"
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
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/pgha"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
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
		if t.Failed() {
			p.mu.Lock()
			t.Logf("run round %d:\n%s", p.cmd.Process.Pid, p.log.String())
			p.mu.Unlock()
		}
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
// round, named by libpq's variables, runs on the new primary, all without restarting anything but
// the database. How soon after the promotion is logged (measured for docs/deploy.md, not
// asserted: the waits' bounds only stop a hung test).
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
	t.Logf("a new round had run %s after the promotion", time.Since(promoted))

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

// twoGateFleet holds the requests of servers below first until releaseFirst, answers servers
// from first to second at once, and holds the others until releaseSecond.
func twoGateFleet(t *testing.T, first, second int) (f *fakefleet.Fleet, releaseFirst, releaseSecond func()) {
	g1, g2 := make(chan struct{}), make(chan struct{})
	var o1, o2 sync.Once
	f = fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/s/"))
		switch {
		case n < first:
			<-g1
		case n >= second:
			<-g2
		}
		fakefleet.OK(w, r)
	}))
	releaseFirst = func() { o1.Do(func() { close(g1) }) }
	releaseSecond = func() { o2.Do(func() { close(g2) }) }
	t.Cleanup(releaseFirst)
	t.Cleanup(releaseSecond)
	return f, releaseFirst, releaseSecond
}

// waitReplicated waits until the standby has replayed all the primary has written.
func waitReplicated(t *testing.T, primary *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var lsn string
	require.NoError(t, primary.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn))
	eventually(t, "the standby to replay the primary", 30*time.Second, func() bool {
		var ok bool
		return primary.QueryRow(ctx, `SELECT coalesce(bool_and(replay_lsn >= $1::pg_lsn), false) FROM pg_stat_replication`, lsn).Scan(&ok) == nil && ok
	})
}

func countRuns(t *testing.T, db *pgxpool.Pool) (jobs, runs int) {
	t.Helper()
	require.NoError(t, db.QueryRow(context.Background(),
		`SELECT count(*), count(r.id) FROM probe_jobs j LEFT JOIN probe_runs r ON r.job_id = j.id`).Scan(&jobs, &runs))
	return jobs, runs
}

// Asynchronous replication, told honestly. A run round process (one invocation, 10 checks at a
// time, room to claim all 30 servers) has claimed servers 0-9, and the standby has them, when its
// WAL receiver is held: from then on the primary's commits do not reach it. The round stores 0-9,
// claims and stores 10-19, and claims 20-29, whose checks are in flight when the primary is killed
// and the standby promoted. On the new primary the round and the claims of 0-9 exist, open; every
// result and the claims of 10-29 are gone, and their servers are due again. Counted at the fleet
// and on the new primary: what the failover lost before the journal and the spool are replayed,
// and after (nothing); and no server checked twice (the round claims no more on the new timeline,
// and a replay comes before any claim).
func TestAsynchronousFailoverLosesWhatTheJournalAndTheSpoolThenRestore(t *testing.T) {
	const n, first, second = 30, 10, 20
	ctx := context.Background()
	pair, err := pgha.Start(ctx, pgha.Options{Synchronous: false, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Stop() })
	url := pair.MultiHostURL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	db, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	primary, err := pgxpool.New(ctx, pair.Primary.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(primary.Close)
	fleet, releaseFirst, releaseSecond := twoGateFleet(t, first, second)
	fleet.AddServers(t, db, n, "", testfactory.ServerOpts{Kind: "http"})
	bin := buildBinary(t)

	spool := filepath.Join(t.TempDir(), "spool")
	rounds := []*roundProc{startRound(t, bin, url, spool, nil, "--fanout", "0", "--concurrency", "10", "--claim-limit", "40")}
	eventually(t, "the first claim's checks in flight", 60*time.Second, func() bool { return fleet.Hits() >= first })
	waitReplicated(t, primary)
	drop, err := pair.HoldWALReceiver()
	require.NoError(t, err)
	releaseFirst()
	eventually(t, "every server's check begun and the first 20 stored on the primary", 60*time.Second, func() bool {
		_, runs := countRuns(t, primary)
		return fleet.Hits() >= n && runs >= second
	})
	require.NoError(t, pair.KillPrimary())
	primary.Close()
	drop()
	releaseSecond()
	require.NoError(t, pair.WaitStandby(ctx))
	require.NoError(t, pair.Promote(ctx))
	promoted := time.Now()
	db.Reset()
	for _, r := range rounds {
		_ = r.wait(t, 90*time.Second) // exit 3: results wait in the spool
		r.mu.Lock()
		require.Contains(t, r.log.String(), "the database failed over (now on timeline 2", "the round says what it stored again")
		r.mu.Unlock()
	}
	_, runsAfterRounds := countRuns(t, db)

	// The next round stores what waits in the spool before it claims; nothing is due.
	next := startRound(t, bin, url, spool, nil)
	require.NoError(t, next.wait(t, 60*time.Second))
	t.Logf("a new round had run %s after the promotion", time.Since(promoted))
	jobs, runs := countRuns(t, db)
	var restored, fromJournal int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE source = 'journal') FROM probe_restored_jobs`).Scan(&restored, &fromJournal))
	t.Logf("asynchronous failover, %d checks seen by the fleet: 0 results and %d claims survived on the new primary; "+
		"%d runs after the round's own journal replay, %d after the next round's spool replay (%d restored under jobs of their own, "+
		"%d of them from the journal); %d lost in the end", fleet.Hits(), first, runsAfterRounds, runs, restored, fromJournal, n-runs)
	require.Equal(t, n, runs, "every result the fleet saw is stored on the new primary")
	require.Equal(t, n, jobs, "one job per server")
	require.Equal(t, n-first, restored, "the results whose claims vanished are restored; the others finish their own claims")
	for path, at := range fleet.Arrivals() {
		require.Len(t, at, 1, "%s was checked more than once", path)
	}
}

// Two worker processes on a multi-host URL run a round every 5 s over a synchronous primary and
// standby; the primary is killed with SIGKILL while a round's invocation holds open jobs, and the
// standby is promoted. Without a restart of the workers: claims, finishes, heartbeats, River's
// fetch and its leader (river_leader is UNLOGGED: empty on the promoted standby) follow the new
// primary, a round starts there, every server is checked, no result is lost and no server is
// checked twice. How soon the first round started is logged (measured for docs/deploy.md, not
// asserted: the waits' bounds only stop a hung test).
func TestWorkersFollowTheNewPrimaryAfterASynchronousFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary, a standby and two workers, and runs for about half a minute")
	}
	ctx := context.Background()
	pair, err := pgha.Start(ctx, pgha.Options{Synchronous: true, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Stop() })
	url := pair.MultiHostURL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	bin := buildBinary(t)

	// The fleet answers after half a second, so a round lasts long enough to be cut midway.
	fleet := fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(500 * time.Millisecond)
		fakefleet.OK(w, nil)
	}))
	const servers = 36
	fleet.AddServers(t, pool, servers, "w", testfactory.ServerOpts{Plan: "frequent", Kind: "http", NextCheckAt: testfactory.Ptr(time.Now())})
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 2, 4, 2
	rs.RequestTimeout, rs.MaxDuration = settings.Duration(time.Second), settings.Duration(5*time.Second)
	_, err = release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: 5 * time.Second, Actor: "test"})
	require.NoError(t, err)
	workers := []*proc{startWorker(t, bin, url), startWorker(t, bin, url)}

	eventually(t, "a round running an invocation with open jobs", 2*time.Minute, func() bool {
		return queryInt(t, pool, midRoundAfter, time.Now().Add(-time.Hour)) > 0
	})
	require.NoError(t, pair.KillPrimary())
	require.NoError(t, pair.Promote(ctx))
	promoted := time.Now()
	pool.Reset()

	eventually(t, "a round started on the new primary", time.Minute, func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*)::int FROM probe_rounds WHERE started_at > $1`, promoted).Scan(&n) == nil && n > 0
	})
	var firstAfter time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(started_at) FROM probe_rounds WHERE started_at > $1`, promoted).Scan(&firstAfter))
	t.Logf("the first round on the new primary started %s after the promotion", firstAfter.Sub(promoted))

	eventually(t, "every server checked and every round finished", 2*time.Minute, func() bool {
		return queryInt(t, pool, `SELECT count(*)::int FROM servers s WHERE NOT EXISTS
		         (SELECT 1 FROM probe_jobs j JOIN probe_runs r ON r.job_id = j.id WHERE j.server_id = s.id)`) == 0 &&
			queryInt(t, pool, `SELECT count(*)::int FROM probe_rounds WHERE finished_at IS NULL`) == 0
	})
	jobs := queryInt(t, pool, `SELECT count(*)::int FROM probe_jobs`)
	runs := queryInt(t, pool, `SELECT count(*)::int FROM probe_runs`)
	t.Logf("after the failover: %d jobs, %d runs, %d requests at the fleet", jobs, runs, fleet.Hits())
	require.Equal(t, servers, jobs, "one job per server")
	require.Equal(t, servers, runs, "no result lost")
	for path, at := range fleet.Arrivals() {
		require.Len(t, at, 1, "%s was checked more than once", path)
	}
	for _, w := range workers {
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, <-w.done, "the worker stops cleanly on the new primary")
	}
}

// The same two workers over an asynchronous standby whose WAL receiver is held while a round runs:
// the primary's last claims and results never reach the standby, which is promoted after the
// primary is killed. Counted on the new primary: what the failover lost and what the workers'
// journals and spools stored again (every result the fleet saw is stored), and every server the
// fleet saw twice is a pair audit duplicates explains as a failover's.
func TestWorkersRestoreWhatAnAsynchronousFailoverLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary, a standby and two workers, and runs for about half a minute")
	}
	ctx := context.Background()
	pair, err := pgha.Start(ctx, pgha.Options{Synchronous: false, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Stop() })
	url := pair.MultiHostURL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	primary, err := pgxpool.New(ctx, pair.Primary.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(primary.Close)
	bin := buildBinary(t)

	fleet := fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(500 * time.Millisecond)
		fakefleet.OK(w, nil)
	}))
	const servers = 36
	fleet.AddServers(t, pool, servers, "w", testfactory.ServerOpts{Plan: "frequent", Kind: "http", NextCheckAt: testfactory.Ptr(time.Now())})
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 2, 4, 2
	rs.RequestTimeout, rs.MaxDuration = settings.Duration(time.Second), settings.Duration(5*time.Second)
	_, err = release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: 5 * time.Second, Actor: "test"})
	require.NoError(t, err)
	workers := []*proc{startWorker(t, bin, url), startWorker(t, bin, url)}

	eventually(t, "a round running an invocation with open jobs", 2*time.Minute, func() bool {
		return queryInt(t, pool, midRoundAfter, time.Now().Add(-time.Hour)) > 0
	})
	waitReplicated(t, primary)
	drop, err := pair.HoldWALReceiver()
	require.NoError(t, err)
	held := queryInt(t, primary, `SELECT count(*)::int FROM probe_runs`)
	eventually(t, "results stored on the primary only", time.Minute, func() bool {
		return queryInt(t, primary, `SELECT count(*)::int FROM probe_runs`) >= held+6
	})
	require.NoError(t, pair.KillPrimary())
	primary.Close()
	drop()
	require.NoError(t, pair.WaitStandby(ctx))
	require.NoError(t, pair.Promote(ctx))
	promoted := time.Now()
	pool.Reset()
	survived := queryInt(t, pool, `SELECT count(*)::int FROM probe_runs`)

	eventually(t, "every server checked and stored, every round finished", 2*time.Minute, func() bool {
		return queryInt(t, pool, `SELECT count(*)::int FROM servers s WHERE NOT EXISTS
		         (SELECT 1 FROM probe_jobs j JOIN probe_runs r ON r.job_id = j.id WHERE j.server_id = s.id)`) == 0 &&
			queryInt(t, pool, `SELECT count(*)::int FROM probe_rounds WHERE finished_at IS NULL AND started_at > $1`, promoted) == 0
	})
	// The heartbeats replay the journals every 10 s: wait until every check the fleet saw is stored.
	eventually(t, "every check the fleet saw stored", time.Minute, func() bool {
		return queryInt(t, pool, `SELECT count(*)::int FROM probe_runs`) >= int(fleet.Hits())
	})
	runs := queryInt(t, pool, `SELECT count(*)::int FROM probe_runs`)
	restored := queryInt(t, pool, `SELECT count(*)::int FROM probe_restored_jobs`)
	rep, err := audit.Duplicates(ctx, pool, audit.DuplicatesParams{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	t.Logf("asynchronous failover under workers: %d results had been stored on the old primary when it died (%d after the "+
		"receiver was held), %d survived on the new one; in the end %d runs for %d checks the fleet saw, %d restored "+
		"under jobs of their own; %d duplicate pair(s), %d of them failover, %d unexplained",
		held+6, 6, survived, runs, fleet.Hits(), restored, len(rep.Pairs), rep.Count(audit.ClassFailover), rep.Unexplained())
	require.Equal(t, int(fleet.Hits()), runs, "every check the fleet saw is stored once")
	require.Zero(t, rep.Unexplained(), "every server checked twice is explained")
	for _, w := range workers {
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, <-w.done, "the worker stops cleanly on the new primary")
	}
}
