package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

var migratedInternal = dbtest.NewTemplate("worker_internal_tmpl", testfactory.Migrate)

// parkedChecker holds every check until release is closed (or its context ends), and says on
// entered when one starts.
type parkedChecker struct {
	entered chan struct{}
	release chan struct{}
}

func (c *parkedChecker) Check(ctx context.Context, _ check.Target) check.Result {
	c.entered <- struct{}{}
	select {
	case <-c.release:
		return check.Result{Outcome: check.OutcomeOK}
	case <-ctx.Done():
		return check.Result{Outcome: check.OutcomeError, Error: "interrupted"}
	}
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// recordRelease records an active release of version dev, with a schedule of every (0: none).
func recordRelease(t *testing.T, pool *pgxpool.Pool, every time.Duration) {
	t.Helper()
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 0, 1, 1
	_, err := release.Record(context.Background(), pool, release.RecordRequest{Version: "dev", Settings: rs, Every: every, Actor: "test"})
	require.NoError(t, err)
}

func heartbeatAge(t *testing.T, pool *pgxpool.Pool, round int64) time.Duration {
	t.Helper()
	var age time.Duration
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT clock_timestamp() - heartbeat_at FROM probe_rounds WHERE id = $1", round).Scan(&age))
	return age
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A round whose invocation a worker runs heartbeats while it runs, as a `run round` round does:
// without it, status and deploy verify would judge a long worker round dead. The worker's own row
// says it runs one invocation, then, after a clean stop, that it stopped.
func TestAWorkerKeepsTheRoundItRunsAlive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	recordRelease(t, pool, 0)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: "http://127.0.0.1:1/"})
	s, err := Settings(ctx, pool, "dev", probe.TriggerManual, false)
	require.NoError(t, err)

	c := &parkedChecker{entered: make(chan struct{}, 1), release: make(chan struct{})}
	cfg := Config{Pool: pool, Log: testLog(t), MaxWorkers: 2, Version: "dev", AllowPrivateTargets: true,
		NewChecker: func(probe.Settings) probe.Checker { return c }, heartbeatEvery: 50 * time.Millisecond}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(wctx, cfg) }()

	q, err := EnqueueRound(ctx, pool, s, "")
	require.NoError(t, err)
	<-c.entered // the invocation holds its check: the round is mid-way
	// Make the round look as old as a dead one, then see a heartbeat bring it back.
	_, err = pool.Exec(ctx, "UPDATE probe_rounds SET heartbeat_at = heartbeat_at - interval '1 hour' WHERE id = $1", q.RoundID)
	require.NoError(t, err)
	waitFor(t, "the worker's heartbeat of the round it runs", func() bool {
		return heartbeatAge(t, pool, q.RoundID) < queries.RoundDeadAfter
	})
	var running int
	require.NoError(t, pool.QueryRow(ctx, "SELECT invocations_running FROM probectl_workers").Scan(&running))
	require.Equal(t, 1, running, "the worker's heartbeat says it runs one invocation")

	close(c.release)
	sum, err := WaitRound(ctx, pool, q)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Runs)
	stop()
	require.NoError(t, <-done)
	var stopped bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT stopped_at IS NOT NULL FROM probectl_workers").Scan(&stopped))
	require.True(t, stopped, "a clean stop is recorded")
}

// A heartbeat keeps alive the rounds whose invocations wait in the queue (a live worker will run
// them), but not a round whose invocation is running on another worker: if that worker is dead,
// its round must be seen dead, as a killed `run round` is.
func TestAHeartbeatKeepsQueuedRoundsAliveButNotAnotherWorkersRunningOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	recordRelease(t, pool, 0)
	s, err := Settings(ctx, pool, "dev", probe.TriggerManual, false)
	require.NoError(t, err)
	waiting, err := EnqueueRound(ctx, pool, s, "")
	require.NoError(t, err)
	elsewhere, err := EnqueueRound(ctx, pool, s, "")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempted_at = now(), attempt = 1,
	                                              attempted_by = '{other-1}'
	                          WHERE (args ->> 'round_id')::bigint = $1`, elsewhere.RoundID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE probe_rounds SET heartbeat_at = heartbeat_at - interval '1 hour'")
	require.NoError(t, err)

	newProcess(Config{Pool: pool, Log: testLog(t), MaxWorkers: 1, Version: "dev"}).beatOnce(ctx)
	require.Less(t, heartbeatAge(t, pool, waiting.RoundID), queries.RoundDeadAfter, "a queued round is alive")
	require.Greater(t, heartbeatAge(t, pool, elsewhere.RoundID), queries.RoundDeadAfter,
		"another worker's running round is not kept alive here")
}

// A worker stores what waits in its spool before it runs anything, and its heartbeat reports
// what is left there (here a file a live round still writes, which no replay takes) and what it
// set aside for a person (a result whose job is gone, from a record too old to restore it), since
// status on another machine cannot read this one's files.
func TestAWorkerReplaysItsSpoolOnStartAndReportsItsDepth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	srv := testfactory.Server(ctx, t, pool, nil)
	round := testfactory.Round(ctx, t, pool, nil)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	writeSpooled(t, pool, dir, round, srv, job, "stored.jsonl")
	writeSpooled(t, pool, dir, round, srv, job+1000, "orphan.jsonl") // no such job: kept, set aside
	busy := writeSpooled(t, pool, dir, round, srv, job+2000, "busy.jsonl")
	f, err := os.Open(busy)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX)) // as its round holds it: it stays

	// A beat has its interval for all it does, the replay last with what is left: at 50 ms, on a
	// loaded machine (CI runs every package at once, with -race), the three writes before it
	// could use the whole beat every time, and the replay never ran (the test timed out twice).
	cfg := Config{Pool: pool, Log: testLog(t), MaxWorkers: 1, Version: "dev", SpoolDir: dir,
		heartbeatEvery: 500 * time.Millisecond}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(wctx, cfg) }()
	depth := func() [3]int {
		var files, results, aside int
		require.NoError(t, pool.QueryRow(ctx, "SELECT spool_files, spool_results, spool_set_aside FROM probectl_workers").
			Scan(&files, &results, &aside))
		return [3]int{files, results, aside}
	}
	runsOf := func(job int64) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probe_runs WHERE job_id = $1", job).Scan(&n))
		return n
	}
	waitFor(t, "the worker's first heartbeat", func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM probectl_workers").Scan(&n))
		return n == 1
	})
	require.Equal(t, 1, runsOf(job), "the spooled result was stored at start, before the first heartbeat")
	require.Equal(t, [3]int{1, 1, 1}, depth(), "the heartbeat reports what is left in the spool, and what was set aside")
	require.FileExists(t, filepath.Join(dir, fmt.Sprintf("round-%d-pid-1-orphan.jsonl.bad", round)))

	// A result spooled while the worker runs is stored by a later heartbeat.
	later := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: testfactory.Server(ctx, t, pool, nil), RoundID: &round})
	var srv2 int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT server_id FROM probe_jobs WHERE id = $1", later).Scan(&srv2))
	laterFile := writeSpooled(t, pool, dir, round, srv2, later, "later.jsonl")
	waitFor(t, "a heartbeat to store the result spooled later", func() bool { return runsOf(later) == 1 })
	waitFor(t, "the heartbeat to report the spool back to its one busy file", func() bool { return depth() == [3]int{1, 1, 1} })
	require.NoFileExists(t, laterFile)

	// Its round gone, the busy file is replayed: its result has no job, and is set aside.
	require.NoError(t, f.Close())
	waitFor(t, "a heartbeat to set the busy file aside", func() bool { return depth() == [3]int{0, 0, 2} })

	// A file holding only a line cut short (a crashed invocation's) counts no result, and is
	// still replayed, set aside and counted.
	cut := filepath.Join(dir, fmt.Sprintf("round-%d-pid-1-cut.jsonl", round))
	require.NoError(t, os.WriteFile(cut+".new", []byte(`{"round_id":`), 0o600))
	require.NoError(t, os.Rename(cut+".new", cut))
	waitFor(t, "a heartbeat to set the cut file aside", func() bool { return depth() == [3]int{0, 0, 3} })
	require.FileExists(t, cut+".bad")
	stop()
	require.NoError(t, <-done)
}

// writeSpooled writes a spool file holding one result of job, as a round that could not store it
// would have, and returns its path.
func writeSpooled(t *testing.T, pool *pgxpool.Pool, dir string, round, srv, job int64, name string) string {
	t.Helper()
	line := testfactory.SpoolLine(context.Background(), t, pool, round, srv, job, map[string]any{"outcome": "ok"},
		"finish job: connection refused")
	// Written under a hidden name and renamed, as a round makes its spool file: a heartbeat's
	// replay that read the file between its creation and its write would find it empty and
	// remove it, and the result with it.
	final := filepath.Join(dir, fmt.Sprintf("round-%d-pid-1-%s", round, name))
	hidden := filepath.Join(dir, "."+filepath.Base(final)+".new")
	require.NoError(t, os.WriteFile(hidden, line, 0o600))
	require.NoError(t, os.Rename(hidden, final))
	return final
}

// The leader inserts a tick job only when a tick has work: an idle leader, whose schedule is not
// due or whose round's invocations are still queued, inserts none (it used to insert one every
// second, each kept by River for a day).
func TestTheLeaderInsertsATickOnlyWhenATickHasWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	p := newProcess(Config{Pool: pool, Log: testLog(t), MaxWorkers: 1, Version: "dev"})
	inserts := func() bool { args, _ := p.tickJob(); return args != nil }

	require.False(t, inserts(), "no release: nothing to schedule")
	recordRelease(t, pool, 0)
	require.False(t, inserts(), "a release without a schedule")
	recordRelease(t, pool, time.Hour)
	require.True(t, inserts(), "a schedule and no round yet: a round is due")

	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	id, err := Tick(ctx, pool, "dev", "", false, client)
	require.NoError(t, err)
	require.NotZero(t, id)
	require.False(t, inserts(), "a round just started, its invocations queued: nothing to do")

	_, err = pool.Exec(ctx, "UPDATE probe_rounds SET started_at = started_at - interval '2 hours'")
	require.NoError(t, err)
	require.False(t, inserts(), "due by the schedule, but the previous round's invocations are queued")

	_, err = pool.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now(), attempted_at = now(),
	                                              attempted_by = '{w-1}', attempt = 1`)
	require.NoError(t, err)
	require.True(t, inserts(), "every invocation over: the round is to be closed, and the next is due")
	_, err = Tick(ctx, pool, "dev", "", false, client)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now(), attempted_at = now(),
	                                              attempted_by = '{w-1}', attempt = 1`)
	require.NoError(t, err)
	_, err = Tick(ctx, pool, "dev", "", false, client) // closes the second round; the next is an hour away
	require.NoError(t, err)
	require.False(t, inserts(), "rounds closed and none due: idle")
}

// lines is a log that keeps what was logged, for a test to count.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *lines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// While a release of another version is active, a leader of this version inserts no tick (each
// one used to fail, one a second) and says why once per release, not every second.
func TestAnIdleLeaderInsertsNoTickForAReleaseOfAnotherVersionAndSaysSoOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	log := &lines{}
	p := newProcess(Config{Pool: pool, Log: slog.New(slog.NewTextHandler(log, nil)), MaxWorkers: 1, Version: "v1"})
	inserts := func() bool { args, _ := p.tickJob(); return args != nil }

	recordRelease(t, pool, time.Hour) // version dev, due: no round yet
	for range 3 {
		require.False(t, inserts(), "a round of dev is due, but this worker is v1")
	}
	require.Equal(t, 1, log.count("the active release is of another version"), log.buf.String())

	rs := settings.Default().Carried
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "v1", Settings: rs, Every: time.Hour, Actor: "test"})
	require.NoError(t, err)
	require.True(t, inserts(), "its own version's round is due")
	recordRelease(t, pool, time.Hour)
	require.False(t, inserts())
	require.Equal(t, 2, log.count("the active release is of another version"), "said again for the next such release")
}

// A spool file a replay cannot take (here one others may write: never replayed) stays, and every
// heartbeat meets it again: the worker says it once, not every 10 s.
func TestAHeartbeatSaysAReplayProblemOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, dir, log := spoolingProcess(t)
	file := filepath.Join(dir, "round-1-pid-1-00000000.jsonl")
	require.NoError(t, os.WriteFile(file, []byte("{}\n"), 0o600))
	require.NoError(t, os.Chmod(file, 0o660))
	for range 3 {
		p.beatOnce(ctx)
	}
	require.Equal(t, 1, strings.Count(log.String(), "others may write it"), "%s", log.String())
	require.FileExists(t, file)
}

// A spool directory removed under a live worker is made again at its next heartbeat: it was
// never, so the next finish that could not reach the database found nowhere to spool its result,
// and lost it. One that cannot be used (here a file stands where it was) is said, once.
func TestAHeartbeatMakesARemovedSpoolDirectoryAgainOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, dir, log := spoolingProcess(t)
	p.beatOnce(ctx)

	require.NoError(t, os.RemoveAll(dir))
	p.beatOnce(ctx)
	info, err := os.Stat(dir)
	require.NoError(t, err, "made again")
	require.True(t, info.IsDir())
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, nil, 0o600))
	for range 3 {
		p.beatOnce(ctx)
	}
	require.Equal(t, 1, strings.Count(log.String(), "the spool directory cannot be used"), "said once: %s", log.String())
	require.Equal(t, 1, strings.Count(log.String(), "level=WARN"), "and nothing else of the spool said every beat: %s", log.String())
}

// spoolingProcess is a worker's process on a database of its own with a spool directory (made),
// logging to the buffer it returns.
func spoolingProcess(t *testing.T) (*process, string, *bytes.Buffer) {
	t.Helper()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	var log bytes.Buffer
	return newProcess(Config{Pool: pool, Log: slog.New(slog.NewTextHandler(&log, nil)), MaxWorkers: 1, Version: "dev",
		SpoolDir: dir}), dir, &log
}
