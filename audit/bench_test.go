package audit_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/queries"
)

// BenchmarkDuplicatesVsCount generates a month of jobs and times the duplicate audit beside a
// plain count(*) over the same rows, on the same database, and beside the same definition computed
// entirely in SQL with a window function. Two more yardsticks say where the audit's time goes: its
// ordered scan counted inside the database (the floor of any audit that walks the jobs in server
// order) and the same rows streamed to the client and dropped (what delivering them costs). It
// prints the times, their ratios and the heap the audit needed for a fifth of the population and
// for all of it (which should be the same).
//
// The default size is small so CI runs it in seconds:
//
//	go test -run='^$' -bench=Duplicates -benchtime=1x ./audit/
//
// The production size of the issue (5 million jobs, 200,000 servers, 30 days), a few minutes:
//
//	PROBECTL_BENCH_JOBS=5000000 go test -run='^$' -bench=Duplicates -benchtime=1x -timeout=30m ./audit/
//
// PROBECTL_BENCH_SERVERS (default jobs/25) and PROBECTL_BENCH_REPS (default 3; the median is
// reported) tune it further.
func BenchmarkDuplicatesVsCount(b *testing.B) {
	jobs := envInt(b, "PROBECTL_BENCH_JOBS", 50_000)
	servers := envInt(b, "PROBECTL_BENCH_SERVERS", max(jobs/25, 1))
	reps := envInt(b, "PROBECTL_BENCH_REPS", 3)
	perServer := max(jobs/servers, 1)
	const span = 30 * 24 * time.Hour
	dupEvery := max(servers/20, 1) // twenty planted duplicates at any size
	start := time.Date(2026, 9, 8, 0, 0, 0, 0, time.UTC)
	since, until := start, start.Add(span)
	ctx := context.Background()

	url := migrated.NewDB(b)
	pool := dbtest.Pool(b, url) // no statement timeout: a large load may take long

	loadStart := time.Now()
	loadMonth(b, ctx, pool, servers, perServer, start, span, dupEvery)
	b.Logf("loaded %d servers x %d jobs over %s (+%d planted duplicates) in %s",
		servers, perServer, span, servers/dupEvery, time.Since(loadStart).Round(time.Millisecond))

	// inTx reads in a read-only transaction of its own, after setting it up (SET LOCALs). Every
	// yardstick gets custom plans, as the audit does (queries.AuditPlanSettings): pgx caches the
	// statements, and a generic plan from the sixth run on would time another plan than the one
	// PostgreSQL makes for these bounds (for the count, an index scan in one process, about 1.5x
	// slower than the parallel scan psql gets).
	inTx := func(read func(pgx.Tx) (int64, error), setup ...func(context.Context, queries.DBTX) error) (n int64, err error) {
		err = queries.InReadOnlyTx(ctx, pool, func(tx pgx.Tx) error {
			for _, set := range append([]func(context.Context, queries.DBTX) error{queries.AuditPlanSettings}, setup...) {
				if err := set(ctx, tx); err != nil {
					return err
				}
			}
			n, err = read(tx)
			return err
		})
		return n, err
	}
	countJobs, orderedScanCount := testSQL(b, "count_jobs.sql"), testSQL(b, "ordered_scan_count.sql")
	noParallelSQL := testSQL(b, "no_parallel.sql")
	// noParallel keeps the rest of the transaction from using parallel workers.
	noParallel := func(ctx context.Context, db queries.DBTX) error {
		_, err := db.Exec(ctx, noParallelSQL)
		return err
	}
	countRows := func(tx pgx.Tx) (n int64, err error) {
		err = tx.QueryRow(ctx, countJobs, since, until).Scan(&n)
		return n, err
	}
	count := func() (int64, error) { return inTx(countRows) }
	countSerial := func() (int64, error) { return inTx(countRows, noParallel) }
	// The floor of any audit walking the jobs in (server, request) order: the audit's own scan,
	// counted inside the database by one process, no row sent.
	orderedScan := func() (int64, error) {
		return inTx(func(tx pgx.Tx) (n int64, err error) {
			err = tx.QueryRow(ctx, orderedScanCount, since, until).Scan(&n)
			return n, err
		}, noParallel)
	}
	// What delivering those rows costs: the audit's scan streamed to the client and dropped.
	streamed := func() (int64, error) {
		return inTx(func(tx pgx.Tx) (n int64, err error) {
			err = queries.AuditDuplicateScan(ctx, tx, since, until, func(queries.AuditJobRow) error { n++; return nil })
			return n, err
		})
	}
	auditAll := func() (*audit.DuplicatesReport, error) {
		return audit.Duplicates(ctx, pool, audit.DuplicatesParams{Since: since, Until: until})
	}
	window := func() (int64, error) {
		return inTx(func(tx pgx.Tx) (int64, error) {
			_, pairs, err := windowCount(b, ctx, tx, since, until, audit.DefaultWindow)
			return pairs, err
		})
	}

	// Warm the cache, and check that they all agree before timing them.
	n, err := count()
	require.NoError(b, err)
	r, err := auditAll()
	require.NoError(b, err)
	pairs, err := window()
	require.NoError(b, err)
	require.Equal(b, n, r.Population.Jobs)
	floorN, err := orderedScan()
	require.NoError(b, err)
	require.Equal(b, n, floorN)
	streamedN, err := streamed()
	require.NoError(b, err)
	require.Equal(b, n, streamedN)
	require.Equal(b, pairs, int64(len(r.Pairs)))
	require.Equal(b, int64(servers/dupEvery), pairs, "the planted duplicates and no others")

	for b.Loop() {
		var countT, serialT, floorT, streamT, auditT, windowT []time.Duration
		for range reps {
			countT = append(countT, timed(b, func() error { _, err := count(); return err }))
			serialT = append(serialT, timed(b, func() error { _, err := countSerial(); return err }))
			floorT = append(floorT, timed(b, func() error { _, err := orderedScan(); return err }))
			streamT = append(streamT, timed(b, func() error { _, err := streamed(); return err }))
			auditT = append(auditT, timed(b, func() error { _, err := auditAll(); return err }))
			windowT = append(windowT, timed(b, func() error { _, err := window(); return err }))
		}
		c, cs, a, w := median(countT), median(serialT), median(auditT), median(windowT)
		fl, st := median(floorT), median(streamT)
		b.ReportMetric(c.Seconds(), "count_s")
		b.ReportMetric(a.Seconds(), "audit_s")
		b.ReportMetric(a.Seconds()/c.Seconds(), "audit/count")
		b.ReportMetric(cs.Seconds(), "count_1proc_s")
		b.ReportMetric(w.Seconds(), "sql_window_s")
		b.ReportMetric(fl.Seconds(), "ordered_scan_s")
		b.ReportMetric(st.Seconds(), "rows_streamed_s")

		// audit duplicates --since 10m: the last ten minutes of the month, in its last partition.
		var recentT []time.Duration
		for range reps {
			recentT = append(recentT, timed(b, func() error {
				_, err := audit.Duplicates(ctx, pool, audit.DuplicatesParams{Since: until.Add(-10 * time.Minute), Until: until})
				return err
			}))
		}
		recent := median(recentT)
		b.ReportMetric(recent.Seconds()*1000, "audit_10m_ms")

		fifth := heapFor(b, pool, audit.DuplicatesParams{Since: until.Add(-span / 5), Until: until})
		whole := heapFor(b, pool, audit.DuplicatesParams{Since: since, Until: until})
		b.ReportMetric(float64(whole.peak)/(1<<10), "peak_heap_KiB")

		b.Logf("PostgreSQL %s, GOMAXPROCS %d, %d CPUs; %d jobs for %d servers, %d duplicate pairs",
			serverVersion(b, pool), runtime.GOMAXPROCS(0), runtime.NumCPU(), n, r.Population.Servers, pairs)
		b.Logf("count(*)            %8.3f s", c.Seconds())
		b.Logf("count(*), 1 process %8.3f s", cs.Seconds())
		b.Logf("ordered scan only   %8.3f s  (%.2fx count; the audit's scan counted in the database, 1 process, no row sent)", fl.Seconds(), fl.Seconds()/c.Seconds())
		b.Logf("rows streamed only  %8.3f s  (%.2fx count; the audit's scan sent to the client and dropped)", st.Seconds(), st.Seconds()/c.Seconds())
		b.Logf("audit duplicates    %8.3f s  (%.2fx count, %.2fx count in 1 process)", a.Seconds(), a.Seconds()/c.Seconds(), a.Seconds()/cs.Seconds())
		b.Logf("same, SQL window    %8.3f s  (%.2fx count)", w.Seconds(), w.Seconds()/c.Seconds())
		b.Logf("audit --since 10m   %8.3f ms (the last ten minutes of the month)", recent.Seconds()*1000)
		b.Logf("partitions of probe_jobs: %d; rows in probe_jobs_default: %d", partitions(b, pool), defaultRows(b, pool))
		require.Zero(b, invalidIndexes(b, pool), "an index of probe_jobs left invalid by the load (built ON ONLY the parent)")
		b.Logf("heap, a fifth of the jobs (%d): peak %.1f KiB live above baseline, %.2f bytes allocated per job",
			fifth.jobs, float64(fifth.peak)/(1<<10), fifth.allocPerJob)
		b.Logf("heap, all of the jobs (%d):     peak %.1f KiB live above baseline, %.2f bytes allocated per job",
			whole.jobs, float64(whole.peak)/(1<<10), whole.allocPerJob)
	}
}

func timed(b *testing.B, fn func() error) time.Duration {
	b.Helper()
	start := time.Now()
	require.NoError(b, fn())
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

type heapUse struct {
	jobs        int64
	peak        uint64  // most live heap above the baseline while the audit ran
	allocPerJob float64 // bytes allocated per job in the population
}

// heapFor runs one audit while sampling the live heap (HeapAlloc) every few milliseconds.
func heapFor(b *testing.B, pool *pgxpool.Pool, p audit.DuplicatesParams) heapUse {
	b.Helper()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	r, err := audit.Duplicates(context.Background(), pool, p)
	close(done)
	wg.Wait()
	require.NoError(b, err)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	use := heapUse{jobs: r.Population.Jobs}
	if peak > before.HeapAlloc {
		use.peak = peak - before.HeapAlloc
	}
	if r.Population.Jobs > 0 {
		use.allocPerJob = float64(after.TotalAlloc-before.TotalAlloc) / float64(r.Population.Jobs)
	}
	return use
}

func serverVersion(b *testing.B, pool *pgxpool.Pool) string {
	b.Helper()
	conn, err := pool.Acquire(context.Background())
	require.NoError(b, err)
	defer conn.Release()
	return conn.Conn().PgConn().ParameterStatus("server_version")
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	require.NoError(b, err, "%s", name)
	require.Positive(b, n, "%s", name)
	return n
}

func partitions(b *testing.B, pool *pgxpool.Pool) (n int) {
	b.Helper()
	require.NoError(b, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_inherits WHERE inhparent = 'probe_jobs'::regclass").Scan(&n))
	return n
}

func defaultRows(b *testing.B, pool *pgxpool.Pool) (n int64) {
	b.Helper()
	require.NoError(b, pool.QueryRow(context.Background(), "SELECT count(*) FROM probe_jobs_default").Scan(&n))
	return n
}

func invalidIndexes(b *testing.B, pool *pgxpool.Pool) (n int) {
	b.Helper()
	require.NoError(b, pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_index AS i
		JOIN pg_class AS c ON c.oid = i.indrelid WHERE c.relname LIKE 'probe_jobs%' AND NOT i.indisvalid`).Scan(&n))
	return n
}
