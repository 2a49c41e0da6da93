package history_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/queries"
)

// BenchmarkServerViews loads a directory with a month of runs (set-based INSERT ... SELECT
// generate_series, before migration 00007, as a database that upgrades across it), migrates it to
// 00007 and later (timing the migration: its backfill of the rollup is most of it), and times
// what the history views do beside a primary-key lookup of a run on the same data (the floor):
// servers show, the page /servers/SLUG, the page /servers (first and deep pages) and runs list
// --server. It prints the median of PROBECTL_BENCH_REPS (default 5) reads of each, and their
// ratios to the floor. Then it times probe_finish with the rollup trigger of 00007 and without it
// (dropped: this is a benchmark's database) on the same data, side by side. Each phase's time goes
// to stderr as it ends, so a slow phase names itself.
//
// The default size is small so `make bench` stays short:
//
//	go test -run='^$' -bench=ServerViews -benchtime=1x ./internal/history/
//
// The size of the issue (100,000 servers, 5,000,000 runs over 30 days):
//
//	PROBECTL_BENCH_SERVERS=100000 PROBECTL_BENCH_RUNS=5000000 go test -run='^$' -bench=ServerViews \
//	    -benchtime=1x -timeout=60m ./internal/history/
//
// PROBECTL_BENCH_PARTITIONED=1 loads a database migrated to the latest instead, its runs and jobs
// in their daily partitions (00017), the rollups filled as 00007's backfill fills them; the
// migration is then not timed. PROBECTL_BENCH_EXPLAIN=1 prints the plan of run_facts read for one
// server's 30 days.
func BenchmarkServerViews(b *testing.B) {
	servers := envInt(b, "PROBECTL_BENCH_SERVERS", 2_000)
	runs := envInt(b, "PROBECTL_BENCH_RUNS", 100_000)
	reps := envInt(b, "PROBECTL_BENCH_REPS", 5)
	finishes := envInt(b, "PROBECTL_BENCH_FINISHES", 200)
	partitioned := os.Getenv("PROBECTL_BENCH_PARTITIONED") != ""
	perServer := max(runs/servers, 1)
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(30 * 24 * time.Hour)
	ctx := context.Background()
	phase := phases()

	url := dbtest.NewEmptyDB(b)
	pool := dbtest.Pool(b, url) // no statement timeout: a large load may take long
	db := stdlib.OpenDBFromPool(pool)
	b.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS("../../queries/migrations"), goose.WithDisableGlobalRegistry(true))
	require.NoError(b, err)
	const historyVersion = 7
	var before int64
	for _, s := range p.ListSources() {
		if s.Version < historyVersion {
			before = max(before, s.Version)
		}
	}
	var migration time.Duration
	if partitioned {
		// Loaded into the daily partitions of 00017, as a directory running on it stores its runs,
		// rather than into the one legacy partition the migration makes of an upgraded database.
		_, err = p.Up(ctx)
		require.NoError(b, err)
		_, err = queries.EnsurePartitions(ctx, pool, start, now, false)
		require.NoError(b, err)
		phase("new database, migrated, daily partitions made")
		bulkLoad(b, pool, phase, servers, perServer, start)
		_, err = pool.Exec(ctx, rollupBackfill(b))
		require.NoError(b, err)
		phase("the rollups filled (00007's backfill)")
	} else {
		_, err = p.UpTo(ctx, before)
		require.NoError(b, err)
		phase(fmt.Sprintf("new database, migrated to %05d", before))

		bulkLoad(b, pool, phase, servers, perServer, start)
		_, err = pool.Exec(ctx, "ANALYZE")
		require.NoError(b, err)
		phase("analyze")
		stop := sampleStatements(b, pool)
		_, err = p.UpTo(ctx, historyVersion)
		require.NoError(b, err)
		migration = phase("migration 00007 (its backfill of the rollup)")
		stop()
		_, err = p.Up(ctx)
		require.NoError(b, err)
		phase("later migrations")
	}
	_, err = pool.Exec(ctx, "VACUUM ANALYZE")
	require.NoError(b, err)
	phase("vacuum analyze")

	slug := fmt.Sprintf("s-%07d", servers/2)
	var runID int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT max(id) / 2 FROM probe_runs`).Scan(&runID))
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return now }})
	page := func(path string) func() error {
		return func() error {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK {
				return fmt.Errorf("%s: %d", path, rec.Code)
			}
			return nil
		}
	}
	deep := max(servers/history.DefaultPerPage-1, 1) // the last page but one
	// the cursor a link to page deep carries: the last row of the page before it
	deepCursor := func(sort string) string {
		d, err := history.ReadDirectory(ctx, pool, history.DirectoryQuery{Sort: sort, Page: deep - 1}, &now)
		require.NoError(b, err)
		require.NotNil(b, d.Next)
		return history.EncodeCursor(*d.Next)
	}
	floor := func() error {
		var n int64
		return pool.QueryRow(ctx, `SELECT requests FROM probe_runs WHERE id = $1`, runID).Scan(&n)
	}
	cases := []struct {
		name string
		read func() error
	}{
		{"servers show SLUG", func() error { _, err := history.ShowServer(ctx, pool, slug, &now); return err }},
		{"GET /servers/SLUG", page("/servers/" + slug)},
		{"GET /servers", page("/servers")},
		{"GET /servers?sort=uptime", page("/servers?sort=uptime")},
		{fmt.Sprintf("GET /servers?sort=uptime&page=%d (OFFSET)", deep), page(fmt.Sprintf("/servers?sort=uptime&page=%d", deep))},
		{fmt.Sprintf("GET /servers?sort=uptime&page=%d&after=…", deep), page(fmt.Sprintf("/servers?sort=uptime&page=%d&after=%s", deep, deepCursor("uptime")))},
		{fmt.Sprintf("GET /servers.json?page=%d (OFFSET)", deep), page(fmt.Sprintf("/servers.json?page=%d", deep))},
		{fmt.Sprintf("GET /servers.json?page=%d&after=…", deep), page(fmt.Sprintf("/servers.json?page=%d&after=%s", deep, deepCursor("slug")))},
		{"runs list --server SLUG", func() error {
			_, err := history.ListRuns(ctx, pool, queries.RunFilter{Server: slug, Limit: 50})
			return err
		}},
		{"runs list (no filter)", func() error {
			_, err := history.ListRuns(ctx, pool, queries.RunFilter{Limit: 50})
			return err
		}},
	}
	if os.Getenv("PROBECTL_BENCH_EXPLAIN") != "" { // how run_facts reads one server's 30 days

		rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM run_facts AS f
			WHERE f.server_id = (SELECT id FROM servers WHERE slug = $1) AND f.started_at > $2::timestamptz - interval '30 days'`, slug, now)
		require.NoError(b, err)
		for rows.Next() {
			var l string
			require.NoError(b, rows.Scan(&l))
			fmt.Println(l)
		}
		rows.Close()
	}
	var parts, inDefault int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'probe_runs'::regclass),
		(SELECT count(*) FROM probe_runs_default)`).Scan(&parts, &inDefault))
	b.ResetTimer()
	out := fmt.Sprintf("\n%d servers, %d runs over 30 days (migration 00007 took %s); probe_runs in %d partitions, %d runs in the default one; median of %d reads\n%-44s %12s %10s\n",
		servers, servers*perServer, migration.Round(time.Millisecond), parts, inDefault, reps, "read", "median", "x floor")
	floorMed := median(b, reps, floor)
	out += fmt.Sprintf("%-44s %12s %10.1f\n", "primary-key lookup of a run (floor)", floorMed.Round(time.Microsecond), 1.0)
	for _, c := range cases {
		med := median(b, reps, c.read)
		out += fmt.Sprintf("%-44s %12s %10.1f\n", c.name, med.Round(time.Microsecond), float64(med)/float64(floorMed))
	}
	phase("reads")

	// probe_finish with the rollup trigger and without it (disabled: a benchmark's database), in
	// alternate blocks so that both see the same load on the machine.
	with, without := benchFinishes(b, pool, finishes)
	out += fmt.Sprintf("\nprobe_finish, median of %d each, one server each\n%-44s %12s %10s\n", finishes, "finish", "median", "x without")
	out += fmt.Sprintf("%-44s %12s %10.1f\n", "without the rollup trigger", without.Round(time.Microsecond), 1.0)
	out += fmt.Sprintf("%-44s %12s %10.1f\n", "with the rollup trigger (00007)", with.Round(time.Microsecond), float64(with)/float64(without))
	phase("finishes")
	b.StopTimer()
	fmt.Print(out)
}

// bulkLoad loads the benchmark's directory (testdata/bench_load.sql) the fast way, which a
// benchmark's database allows: without foreign-key checks or triggers (session_replication_role),
// and with the secondary indexes of probe_jobs and probe_runs dropped during the load and built
// again after it, as they are when the migration runs on a real database.
func bulkLoad(b *testing.B, pool *pgxpool.Pool, phase func(string) time.Duration, servers, perServer int, start time.Time) {
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	require.NoError(b, err)
	defer conn.Release()
	rows, err := conn.Query(ctx, `
		SELECT i.indexname, i.indexdef FROM pg_indexes AS i
		 WHERE i.schemaname = current_schema() AND i.tablename IN ('probe_jobs', 'probe_runs')
		   AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname)`)
	require.NoError(b, err)
	type index struct {
		Name string `db:"indexname"`
		Def  string `db:"indexdef"`
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByName[index])
	require.NoError(b, err)
	for _, ix := range indexes {
		_, err = conn.Exec(ctx, "DROP INDEX "+pgx.Identifier{ix.Name}.Sanitize())
		require.NoError(b, err)
	}
	_, err = conn.Exec(ctx, "SET session_replication_role = replica")
	require.NoError(b, err)
	load, err := os.ReadFile("testdata/bench_load.sql")
	require.NoError(b, err)
	args := [][]any{{servers, start}, {perServer, start}, {}}
	names := []string{"load servers", "load jobs", "load runs"}
	var partitioned bool
	require.NoError(b, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'probe_runs' AND column_name = 'job_requested_at')`).Scan(&partitioned))
	for i, stmt := range strings.Split(string(load), ";\n\n") {
		if partitioned && i == 2 {
			// 00017's partition key: a run without it would land in probe_runs_default (the load
			// runs without triggers).
			stmt = withJobRequestedAt(b, stmt)
		}
		_, err = conn.Exec(ctx, stmt, args[i]...)
		require.NoError(b, err)
		phase(names[i])
	}
	_, err = conn.Exec(ctx, "RESET session_replication_role")
	require.NoError(b, err)
	for _, ix := range indexes {
		// A partitioned table's index is defined ON ONLY the parent: built so, it would be left
		// invalid and on no partition.
		_, err = conn.Exec(ctx, strings.Replace(ix.Def, " ON ONLY ", " ON ", 1))
		require.NoError(b, err)
	}
	phase(fmt.Sprintf("build %d indexes of jobs and runs", len(indexes)))
}

// sampleStatements watches, until stop, which statement the other connections of the database
// run (pg_stat_activity, every 100 ms), then prints to stderr each statement seen and how long it
// ran: what, in a migration, takes the time.
func sampleStatements(b *testing.B, pool *pgxpool.Pool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	type seen struct {
		At    time.Time `db:"query_start"`
		Query string    `db:"query"`
	}
	var log []seen
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rows, err := pool.Query(ctx, `
				SELECT a.query_start, regexp_replace(left(a.query, 200), '\s+', ' ', 'g') AS query
				  FROM pg_stat_activity AS a
				 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.state = 'active'
				   AND a.backend_type = 'client backend'`)
			if err == nil {
				now, _ := pgx.CollectRows(rows, pgx.RowToStructByName[seen])
				for _, n := range now {
					if len(log) == 0 || !log[len(log)-1].At.Equal(n.At) {
						log = append(log, n)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		end := time.Now()
		cancel()
		<-done
		for i, l := range log {
			next := end
			if i+1 < len(log) {
				next = log[i+1].At
			}
			if d := next.Sub(l.At); d > 500*time.Millisecond {
				fmt.Fprintf(os.Stderr, "bench:   %10s  %.120s\n", d.Round(time.Millisecond), l.Query)
			}
		}
	}
}

// benchFinishes opens one job on each of 2n servers (servers that already have a month of runs),
// then finishes them one by one through probe_finish, in blocks of 20 with the rollup trigger
// enabled and disabled in turn, and returns the median of each.
func benchFinishes(b *testing.B, pool *pgxpool.Pool, n int) (with, without time.Duration) {
	ctx := context.Background()
	now := time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)
	type open struct {
		Job  int64     `db:"job_id"`
		Next time.Time `db:"next_check_at"`
	}
	rows, err := pool.Query(ctx, `
		INSERT INTO probe_jobs (server_id, reason, requested_at)
		SELECT s.id, 'manual', $2::timestamptz FROM servers AS s ORDER BY s.id LIMIT $1
		RETURNING id AS job_id, (SELECT s.next_check_at FROM servers AS s WHERE s.id = server_id) AS next_check_at`,
		2*n, now)
	require.NoError(b, err)
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByName[open])
	require.NoError(b, err)
	require.Len(b, jobs, 2*n)
	result := `{"outcome":"ok","summary":"HTTP 200","requests":[{"method":"GET","url":"https://s.example/","status":200,` +
		`"tls":{"cert_not_after":"2027-01-01T00:00:00Z"}}]}`
	var times [2][]time.Duration // [0] with the trigger, [1] without
	const block = 20
	for i, j := range jobs {
		arm := (i / block) % 2
		if i%block == 0 {
			_, err := pool.Exec(ctx, []string{
				`ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_rollup`,
				`ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_rollup`}[arm])
			require.NoError(b, err)
		}
		t := time.Now()
		_, err := pool.Exec(ctx, `SELECT * FROM probe_finish($1, $2, 'ok', NULL, $3, $4, 1, $5::jsonb, NULL, $4)`,
			j.Job, j.Next, now, now.Add(100*time.Millisecond), result)
		times[arm] = append(times[arm], time.Since(t))
		require.NoError(b, err)
	}
	_, err = pool.Exec(ctx, `ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_rollup`)
	require.NoError(b, err)
	for _, t := range times {
		slices.Sort(t)
	}
	return times[0][len(times[0])/2], times[1][len(times[1])/2]
}

// median warms a read once (the cache and the statement cache), then returns the median of reps.
func median(b *testing.B, reps int, read func() error) time.Duration {
	require.NoError(b, read())
	times := make([]time.Duration, 0, reps)
	for range reps {
		t := time.Now()
		require.NoError(b, read())
		times = append(times, time.Since(t))
	}
	slices.Sort(times)
	return times[len(times)/2]
}

// phases returns a function that prints, to stderr, how long the phase it names took since the
// previous call, and returns it.
func phases() func(name string) time.Duration {
	last := time.Now()
	return func(name string) time.Duration {
		d := time.Since(last)
		last = time.Now()
		fmt.Fprintf(os.Stderr, "bench: %-46s %s\n", name, d.Round(time.Millisecond))
		return d
	}
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

// withJobRequestedAt makes bench_load.sql's runs statement store each run's partition key (00017),
// its job's request time.
func withJobRequestedAt(b *testing.B, stmt string) string {
	b.Helper()
	for _, r := range [][2]string{
		{"INSERT INTO probe_runs (job_id, server_id,", "INSERT INTO probe_runs (job_id, job_requested_at, server_id,"},
		{"SELECT j.id, j.server_id,", "SELECT j.id, j.requested_at, j.server_id,"},
	} {
		require.Equal(b, 1, strings.Count(stmt, r[0]), "bench_load.sql's runs statement changed: %q", r[0])
		stmt = strings.Replace(stmt, r[0], r[1], 1)
	}
	return stmt
}

// rollupBackfill is migration 00007's backfill of the rollups (server_run_days, server_rollups,
// run_totals) from the runs stored: what fills them for a load made without triggers.
func rollupBackfill(b *testing.B) string {
	b.Helper()
	m, err := os.ReadFile("../../queries/migrations/00007_history.sql")
	require.NoError(b, err)
	s := string(m)
	from := strings.Index(s, "-- The runs stored before this migration, in the order they were made.")
	to := strings.Index(s, "-- +goose Down")
	require.True(b, from > 0 && to > from, "00007's backfill not found")
	return s[from:to]
}
