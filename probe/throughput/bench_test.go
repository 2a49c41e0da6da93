package throughput

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// BenchmarkThroughput measures, side by side in one run on one database and the same loopback
// fleet (one HTTP server that answers 200 at once):
//
//   - probectl: a round of 1 + fan-out invocations claiming, checking (a real check: one GET on a
//     fresh connection, SSRF guard allowed to loopback) and finishing every due server, each run
//     signed as a real round signs it (DSSE, ed25519: ~31 µs a run, BenchmarkSign), in servers/s,
//     with the mean cost of a claim (probe_claim_lease) and a probe_finish statement;
//   - River v0.51.2: as many jobs, worked by as many workers as the round has check slots, each
//     one GET of the same fleet on a fresh connection, in jobs/s (fetch + GET + complete);
//   - the floor (floorRounds): the same checks, signed, by as many invocations, writing only the
//     rows a check cannot do without, with no guard, in servers/s;
//   - the same three with a check and a job that do nothing;
//   - for each, the CPU a check cost the machine and this process (cpuUse), and the cores that
//     kept busy: where they are all busy, the rate is the cores over the CPU a check costs, so it
//     says what a rate is made of, and what a contender must cost to reach another's rate.
//
// The rounds and the floor run on a pool of probe.RoundConns connections, as `run round` does;
// River on one of (1 + fan-out) + 10, which its client shares among its producer, completer and
// notifier. A round pays for each connection it opens (see probe.RoundConns).
//
// Sizes are small by default so that `make bench` stays short on a shared machine:
//
//	PROBECTL_BENCH_SERVERS      due servers, and River jobs (default 1000)
//	PROBECTL_BENCH_FANOUT       fan-out invocations besides the cron one (default 19)
//	PROBECTL_BENCH_CONCURRENCY  checks at a time per invocation (default 10); River's MaxWorkers
//	                            is (1 + fan-out) x concurrency, the same number of slots
//	PROBECTL_BENCH_HISTORY      1: every server has the history of its steady state (a rollup,
//	                            29 days of runs counted, an alert state that is up), as in every
//	                            round after its first; unset (the default), every check is its
//	                            server's first
//
// The size (10,000 servers, 1,000 slots):
//
//	PROBECTL_BENCH_SERVERS=10000 PROBECTL_BENCH_CONCURRENCY=50 \
//	  go test -run='^$' -bench=Throughput -benchtime=1x -timeout=30m ./probe/throughput/
func BenchmarkThroughput(b *testing.B) {
	servers := envInt(b, "PROBECTL_BENCH_SERVERS", 1000)
	fanout := envInt(b, "PROBECTL_BENCH_FANOUT", 19)
	concurrency := envInt(b, "PROBECTL_BENCH_CONCURRENCY", 10)
	invocations := fanout + 1
	slots := invocations * concurrency

	// A fleet that keeps no record: the peak RSS below is the rounds', not 10,000 recorded requests'.
	fleet := fakefleet.NewCounting(b, nil)

	// One database, two pools: the rounds (and the floor, which stands for them) on the pool
	// `run round` opens, of probe.RoundConns connections, and River on a pool of as many as the
	// round has invocations and ten more, which River's client shares among its producer,
	// completer and notifier.
	tracer := &costTracer{}
	url := migrated.NewDB(b)
	roundPool := dbtest.Pool(b, url, dbtest.MaxConns(probe.RoundConns), dbtest.Tracer(tracer))
	pool := dbtest.Pool(b, url, dbtest.MaxConns(int32(min(invocations+10, 60))))
	b.Logf("%d servers, fan-out %d, %d checks at a time per invocation (%d slots), claim limit %d; "+
		"%d connections for the rounds and the floor, %d for River",
		servers, fanout, concurrency, slots, (servers+invocations-1)/invocations, probe.RoundConns, pool.Config().MaxConns)

	s := settings.Default()
	s.Fanout, s.Concurrency = fanout, concurrency
	s.ClaimLimit = (servers + invocations - 1) / invocations
	s.AllowPrivateTargets = true
	// The longest budget whose worst case still fits the in-flight window, so that a slow claim
	// path shows as a low rate rather than a round cut short.
	s.MaxDuration = settings.Duration(10 * time.Minute)
	s.Version = "bench"
	realCheck := check.New(probe.CheckConfig(s))
	// A real round signs its runs (run round without --unsigned): the key registered as keys
	// register does, once (the tables reset between passes keep it).
	pub, priv, err := attest.GenerateKey()
	require.NoError(b, err)
	signer := attest.NewSigner(priv)
	require.NoError(b, queries.RegisterSigningKey(context.Background(), roundPool, signer.KeyID(), pub))

	var probectlGET, floorGET, riverGET, probectlNoop, floorNoop, riverNoop measured
	b.Run("probectl claim+check+finish", func(b *testing.B) {
		probectlGET = probectlRounds(b, roundPool, tracer, s, signer, realCheck, servers, fleet.URL)
	})
	// Read before River runs in this process: the high-water mark of probectl's rounds alone (the
	// benchmark's own PostgreSQL runs in other processes).
	rss := peakRSS()
	b.Run("floor claim+check+finish", func(b *testing.B) {
		floorGET = floorRounds(b, roundPool, s, signer, realCheck, servers, fleet.URL)
	})
	b.Run("river fetch+GET+complete", func(b *testing.B) {
		riverGET = riverJobs(b, pool, slots, servers, fleet.URL, getFresh)
	})
	b.Run("probectl no-op check", func(b *testing.B) {
		probectlNoop = probectlRounds(b, roundPool, tracer, s, signer, noopChecker{}, servers, fleet.URL)
	})
	b.Run("floor no-op check", func(b *testing.B) {
		floorNoop = floorRounds(b, roundPool, s, signer, noopChecker{}, servers, fleet.URL)
	})
	b.Run("river no-op job", func(b *testing.B) {
		riverNoop = riverJobs(b, pool, slots, servers, fleet.URL, func(context.Context, string) error { return nil })
	})
	fmt.Printf("with a GET: probectl %.0f servers/s, River %.0f jobs/s (probectl/River %.2f), floor %.0f/s (probectl/floor %.2f, floor/River %.2f); "+
		"no-op: probectl %.0f/s, River %.0f/s (%.2f), floor %.0f/s (%.2f, %.2f); peak RSS of the rounds %.0f MiB",
		probectlGET.perSecond, riverGET.perSecond, probectlGET.perSecond/riverGET.perSecond,
		floorGET.perSecond, probectlGET.perSecond/floorGET.perSecond, floorGET.perSecond/riverGET.perSecond,
		probectlNoop.perSecond, riverNoop.perSecond, probectlNoop.perSecond/riverNoop.perSecond,
		floorNoop.perSecond, probectlNoop.perSecond/floorNoop.perSecond, floorNoop.perSecond/riverNoop.perSecond, float64(rss)/(1<<20))
	fmt.Println()
	// What each rate is made of: the CPU a check cost the machine, and the part of it this process
	// spent (the prober and the fleet's HTTP server); the rest is PostgreSQL's.
	fmt.Print("CPU a check costs, machine ms (this process ms), and the cores it kept busy (rate × that):")
	for _, c := range []struct {
		name string
		m    measured
	}{{"probectl GET", probectlGET}, {"floor GET", floorGET}, {"River GET", riverGET},
		{"probectl no-op", probectlNoop}, {"floor no-op", floorNoop}, {"River no-op", riverNoop}} {
		machine, process := c.m.perCheck()
		fmt.Printf(" %s %.3f (%.3f), %.2f cores;", c.name, machine, process, machine*c.m.perSecond/1000)
	}
	fmt.Println()
}

// probectlRounds runs one round per iteration over servers freshly due, its runs signed by
// signer, and reports servers/s and the mean cost of the claims and finishes it sent.
func probectlRounds(b *testing.B, pool *pgxpool.Pool, tracer *costTracer, s probe.Settings, signer probe.Signer, c probe.Checker, servers int, fleetURL string) measured {
	ctx := context.Background()
	var elapsed time.Duration
	var cpu cpuUse
	var jobs int
	tracer.reset()
	spoolDir := b.TempDir()
	for range b.N {
		b.StopTimer()
		reset(b, pool, servers, fleetURL)
		tracer.reset()
		b.StartTimer()
		cpu0 := cpuNow()
		start := time.Now()
		// A spool directory, as `run round` always has one (--spool-dir, else XDG_STATE_HOME): with
		// it comes the failover journal, every result stored written to it and fsync'd (the
		// fsyncs shared). The directory is under TMPDIR: where that is a tmpfs, an fsync costs
		// nothing and the journal's cost drops out of the figures.
		round := &probe.Round{DB: pool, Settings: s, Checker: c, Signer: signer, SpoolDir: spoolDir,
			Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		sum, err := round.Run(ctx)
		elapsed += time.Since(start)
		cpu = cpu.add(cpuNow().since(cpu0))
		require.NoError(b, err)
		if sum.Runs < servers {
			b.Logf("the round's budget (%s) ran out: %d of %d servers checked", s.MaxDuration, sum.Runs, servers)
		}
		require.Equal(b, sum.Jobs, sum.Servers, "no server twice")
		require.Equal(b, sum.Runs, sum.OK, "every check answered ok (a failing fleet would inflate the rate)")
		jobs += sum.Runs
	}
	m := measured{perSecond: float64(jobs) / elapsed.Seconds(), cpu: cpu, n: jobs}
	b.ReportMetric(m.perSecond, "servers/s")
	claims, claimMean := tracer.claim.mean()
	finishes, finishMean := tracer.finish.mean()
	b.ReportMetric(float64(claims)/float64(b.N), "claims/round")
	b.ReportMetric(ms(claimMean), "ms/claim")
	b.ReportMetric(ms(finishMean), "ms/finish")
	acquires, acquireMean := tracer.acquire.mean()
	b.Logf("%d claims (%.1f servers each), %d finishes (%d batches) per round; mean claim %.2f ms, mean finish %.2f ms "+
		"(from the client once it holds a connection, the database's waits included; a batch's time shared among its "+
		"finishes); mean wait for a connection %.2f ms (%d acquired a round, uncontended ones and the heartbeat's included)",
		claims/b.N, float64(tracer.claim.rows.Load())/float64(max(claims, 1)), finishes/b.N, int(tracer.batches.Load())/b.N,
		ms(claimMean), ms(finishMean), ms(acquireMean), acquires/b.N)
	return m
}

// riverArgs is one River job: a GET of url.
type riverArgs struct {
	URL string `json:"url"`
}

func (riverArgs) Kind() string { return "throughput_get" }

// riverJobs inserts servers jobs, then times a River client with slots workers from its start to
// the last job's completion, and reports jobs/s.
func riverJobs(b *testing.B, pool *pgxpool.Pool, slots, servers int, fleetURL string, work func(context.Context, string) error) measured {
	ctx := context.Background()
	var elapsed time.Duration
	var cpu cpuUse
	for range b.N {
		b.StopTimer()
		reset(b, pool, 0, fleetURL)
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[riverArgs]) error {
			return work(ctx, j.Args.URL)
		}))
		client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: slots}},
			Workers: workers,
			Logger:  slog.New(slog.DiscardHandler),
		})
		require.NoError(b, err)
		params := make([]river.InsertManyParams, servers)
		for i := range params {
			params[i] = river.InsertManyParams{Args: riverArgs{URL: fleetURL + "/r/" + strconv.Itoa(i)}}
		}
		_, err = client.InsertManyFast(ctx, params)
		require.NoError(b, err)
		events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
			ChanSize: servers + 1, Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
		b.StartTimer()
		cpu0 := cpuNow()
		start := time.Now()
		require.NoError(b, client.Start(ctx))
		for done := 0; done < servers; done++ {
			ev := <-events
			require.Equal(b, river.EventKindJobCompleted, ev.Kind, "job %d: %v", ev.Job.ID, ev.Job.Errors)
		}
		elapsed += time.Since(start)
		cpu = cpu.add(cpuNow().since(cpu0))
		b.StopTimer()
		cancel()
		require.NoError(b, client.Stop(ctx))
		b.StartTimer()
	}
	m := measured{perSecond: float64(servers*b.N) / elapsed.Seconds(), cpu: cpu, n: servers * b.N}
	b.ReportMetric(m.perSecond, "jobs/s")
	return m
}

// getFresh is what a prober built on River would do per job: one GET on a new connection.
func getFresh(ctx context.Context, url string) error {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return err
}

// noopChecker answers every check ok at once, without a request.
type noopChecker struct{}

func (noopChecker) Check(_ context.Context, t check.Target) check.Result {
	now := time.Now().UTC()
	return check.Result{Outcome: check.OutcomeOK, Summary: "no-op", StartedAt: now, FinishedAt: now}
}

// reset empties the tables and makes servers due servers that point at the fleet.
func reset(b *testing.B, pool *pgxpool.Pool, servers int, fleetURL string) {
	b.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, testSQL(b, "reset.sql"))
	require.NoError(b, err)
	if servers > 0 {
		_, err = pool.Exec(ctx, testSQL(b, "due_servers.sql"), servers, fleetURL)
		require.NoError(b, err)
		analyze := "ANALYZE servers"
		if envInt(b, "PROBECTL_BENCH_HISTORY", 0) > 0 {
			_, err = pool.Exec(ctx, testSQL(b, "history.sql"))
			require.NoError(b, err)
			analyze += ", server_rollups, server_run_days, alert_states"
		}
		_, err = pool.Exec(ctx, analyze)
		require.NoError(b, err)
	}
}

// costTracer sums the time of the statements that claim (probe_claim_lease, or the previous
// binary's probe_claim) and that call probe_finish, from the client's side once it holds a
// connection (a claim's wait for the lock included), and, apart, the waits for a connection.
type costTracer struct {
	claim, finish cost
	batches       atomic.Int64 // batches of finishes
	// acquire is every wait for one of the pool's connections, which the statements' times,
	// measured once a connection is held, leave out (pgxpool.AcquireTracer).
	acquire cost
}

type cost struct {
	n     atomic.Int64
	total atomic.Int64 // nanoseconds
	rows  atomic.Int64 // rows returned: servers claimed, for claims
}

func (c *cost) mean() (int, time.Duration) {
	n := c.n.Load()
	if n == 0 {
		return 0, 0
	}
	return int(n), time.Duration(c.total.Load() / n)
}

type traceKey struct{}

type traceStart struct {
	c     *cost
	start time.Time
}

func (t *costTracer) reset() {
	for _, c := range []*cost{&t.claim, &t.finish, &t.acquire} {
		c.n.Store(0)
		c.total.Store(0)
		c.rows.Store(0)
	}
	t.batches.Store(0)
}

type acquireKey struct{}

func (t *costTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return context.WithValue(ctx, acquireKey{}, time.Now())
}

func (t *costTracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if start, ok := ctx.Value(acquireKey{}).(time.Time); ok {
		t.acquire.n.Add(1)
		t.acquire.total.Add(int64(time.Since(start)))
	}
}

func (t *costTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	var c *cost
	switch {
	case strings.Contains(data.SQL, "probe_claim_due("), strings.Contains(data.SQL, "probe_claim_lease("), strings.Contains(data.SQL, "probe_claim("):
		c = &t.claim
	case strings.Contains(data.SQL, "probe_finish("):
		c = &t.finish
	case strings.Contains(data.SQL, "probe_finish_many("):
		// A set-based batch (queries.FinishBatch) counts as many finishes as it holds.
		for _, a := range data.Args {
			if named, ok := a.(pgx.StrictNamedArgs); ok {
				ids, _ := named["job_ids"].([]int64)
				t.batches.Add(1)
				return context.WithValue(ctx, batchKey{}, batchStart{n: len(ids), start: time.Now()})
			}
		}
		return ctx
	default:
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, traceStart{c: c, start: time.Now()})
}

func (t *costTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(batchKey{}).(batchStart); ok {
		t.finish.n.Add(int64(s.n))
		t.finish.total.Add(int64(time.Since(s.start)))
		return
	}
	if s, ok := ctx.Value(traceKey{}).(traceStart); ok {
		s.c.n.Add(1)
		s.c.total.Add(int64(time.Since(s.start)))
		s.c.rows.Add(data.CommandTag.RowsAffected())
	}
}

// A batch of finishes (the completer's) counts as many finishes as it holds, its time shared
// among them.
type batchKey struct{}

func (t *costTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	n := 0
	for _, q := range data.Batch.QueuedQueries {
		if strings.Contains(q.SQL, "probe_finish(") {
			n++
		}
	}
	if n == 0 {
		return ctx
	}
	t.batches.Add(1)
	return context.WithValue(ctx, batchKey{}, batchStart{n: n, start: time.Now()})
}

func (t *costTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *costTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	if s, ok := ctx.Value(batchKey{}).(batchStart); ok {
		t.finish.n.Add(int64(s.n))
		t.finish.total.Add(int64(time.Since(s.start)))
	}
}

type batchStart struct {
	n     int
	start time.Time
}

var (
	_ pgx.QueryTracer = (*costTracer)(nil)
	_ pgx.BatchTracer = (*costTracer)(nil)
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
