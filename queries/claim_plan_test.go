package queries_test

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// What one claim runs, read from the database itself: auto_explain, on the test's one connection,
// sends the plan of every statement the claim runs, nested ones included, as a notice. The
// claim of this binary (probe_claim_due) runs fewer statements than the previous one
// (probe_claim_lease: isolation, lock, abandoned-job check, claim), and reads the due servers in
// the index's order, up to its limit, rather than judging and sorting every due server.
func TestAClaimRunsFewStatementsAndReadsTheDueServersInIndexOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	dueServers(t, url, 10000)
	pool, plans := explainedPool(t, url, false)
	round := testfactory.Round(ctx, t, pool, nil)

	previous := plans(func() { claimAsPreviousLeasing(t, pool, round, 50, nil) })
	claim := func() {
		jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 50, MinSpacing: 10 * time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, 50)
	}
	// PL/pgSQL plans a statement for its parameters' values five times, then may keep a generic
	// plan: the claims of a round are many on one connection, so the plan judged is the tenth's.
	for range 9 {
		claim()
	}
	this := plans(claim)
	t.Logf("statements per claim: previous binary's %d, this binary's %d", len(previous), len(this))
	assert.Equal(t, 3, len(this), "the call, the lock with the isolation, the claim")
	assert.Less(t, len(this), len(previous))

	var plan string
	for _, p := range this {
		if strings.Contains(p, "servers_due_order_idx") || strings.Contains(p, "Seq Scan on servers") {
			plan = p
		}
	}
	require.NotEmpty(t, plan, "the claim's plan")
	assert.Contains(t, plan, "Index Scan using servers_due_order_idx on servers s", "the claim's plan")
	assert.NotContains(t, plan, "Sort Key: s.next_check_at", "the claim's plan")
	var jit bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_jit_available()").Scan(&jit))
	if !jit {
		t.Log("this server has no JIT: the claim's JIT setting is not exercised")
	}
	assert.NotContains(t, plan, "JIT:", "the claim's plan is not JIT-compiled")
}

// explainedPool is a pool of one connection on database url whose every statement, nested ones
// included, sends its plan as a notice (auto_explain; with analyze, its actual rows and loops), and
// plans, which runs claim and returns the plans of the statements it ran: not the foreign keys'
// checks nor the open-job trigger's insert, which run per job inserted, whichever claim inserts it.
// jit_above_cost 0: every statement of the session JIT-compiles unless it turns JIT off, as the
// claim does (a claim of 50 servers is costed as the whole due range, past the default
// jit_above_cost, and compiling it cost more than running it under BenchmarkThroughput).
func explainedPool(t *testing.T, url string, analyze bool) (*pgxpool.Pool, func(claim func()) []string) {
	t.Helper()
	var mu sync.Mutex
	var notices []string
	pool := dbtest.Pool(t, url, dbtest.MaxConns(1), func(c *pgxpool.Config) {
		c.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			defer mu.Unlock()
			notices = append(notices, n.Message)
		}
	})
	sets := []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice", "SET jit_above_cost = 0"}
	if analyze {
		sets = append(sets, "SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off")
	}
	for _, set := range sets {
		_, err := pool.Exec(t.Context(), set)
		require.NoError(t, err)
	}
	return pool, func(claim func()) []string {
		mu.Lock()
		notices = nil
		mu.Unlock()
		claim()
		mu.Lock()
		defer mu.Unlock()
		var own []string
		for _, n := range notices {
			if !strings.Contains(n, "SELECT 1 FROM ONLY") && !strings.Contains(n, "VALUES (NEW.id") {
				own = append(own, n)
			}
		}
		return own
	}
}

// dueServers adds n servers to database url, due an hour ago, and analyzes them: on a pool of
// its own, not explainedPool's, whose session would JIT-compile and explain every row's triggers.
func dueServers(t *testing.T, url string, n int) {
	t.Helper()
	pool := dbtest.Pool(t, url)
	_, err := pool.Exec(t.Context(), `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
	    SELECT 'plan-' || g, 'https://plan-' || g || '.example/', 'http', 'standard', interval '12 hours', now() - interval '1 hour'
	      FROM generate_series(1, $1::integer) AS g`, n)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), "ANALYZE servers")
	require.NoError(t, err)
}

// openJobProbes matches a plan node that looks up one server's open job: probe_claim_state's
// first lookup, run once per server judged (loops) in an analyzed plan.
var openJobProbes = regexp.MustCompile(`(?m)^.*Scan.* on probe_open_jobs oj\b.*loops=(\d+)`)

// The claim locks before it judges (migrations/00024_claim_lock_first.sql): a server another
// claim holds is skipped unjudged. The invocations of a round claim the same head of the due range
// at once; when the claim judged every due server before its lock skipped the held ones (00021),
// a claim of 25 under BenchmarkThroughput judged ~317 servers. Here another transaction holds the
// first 500 due servers: a claim of 50 judges 50, the servers it locks and takes.
func TestAClaimJudgesOnlyTheServersItLocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	dueServers(t, url, 2000)
	pool, plans := explainedPool(t, url, true)
	round := testfactory.Round(ctx, t, pool, nil)
	const limit = 50
	claim := func() {
		jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: limit, MinSpacing: 10 * time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, limit)
	}
	// The plan judged is the tenth's, as a round's claims run on one connection (see above).
	for range 9 {
		claim()
	}
	other := dbtest.Pool(t, url)
	tx, err := other.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, `SELECT s.id FROM servers AS s WHERE s.status = 'active' AND s.next_check_at <= now()
	    ORDER BY s.next_check_at, s.id LIMIT 500 FOR UPDATE`)
	require.NoError(t, err)
	require.EqualValues(t, 500, tag.RowsAffected())

	judged := 0
	for _, p := range plans(claim) {
		for _, m := range openJobProbes.FindAllStringSubmatch(p, -1) {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			judged += n
		}
	}
	t.Logf("servers judged by a claim of %d past 500 held by another transaction: %d", limit, judged)
	assert.Equal(t, limit, judged, "a claim judges the servers it locks, not the ones another claim holds")
}

// probe_claim_state's job lookups (the spacing guard's, the maintainer's re-check's) read only
// the jobs' partitions that can hold their range: not the ones made ahead for the coming days
// (00017 makes a week of them), which are empty and were each probed once per server judged.
func TestTheClaimReadsNoJobsPartitionOfTheComingDays(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	dueServers(t, url, 200)
	pool, plans := explainedPool(t, url, false)
	rows, err := pool.Query(ctx, `SELECT table_name FROM probe_partitions
	    WHERE parent = 'probe_jobs' AND dropped_at IS NULL AND range_from > now() + interval '1 day'`)
	require.NoError(t, err)
	ahead, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, ahead, "the jobs' partitions made ahead")
	round := testfactory.Round(ctx, t, pool, nil)
	// Every claim's plans: the first five planned for their parameters' values, then generic ones
	// pruned when they start; a maintainer's re-check among the servers so its lookup runs too.
	_, err = pool.Exec(ctx, "UPDATE servers SET maintainer_claimed_at = now() - interval '1 minute' WHERE id % 7 = 0")
	require.NoError(t, err)
	// Today's jobs partition, which the lookups do read: so that the check above cannot pass on
	// plans that name no partition at all.
	var today string
	require.NoError(t, pool.QueryRow(ctx, `SELECT table_name FROM probe_partitions
	    WHERE parent = 'probe_jobs' AND dropped_at IS NULL AND range_from <= now() AND range_to > now()`).Scan(&today))
	readsToday := 0
	for i := range 10 {
		claimed := plans(func() {
			jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 10, MinSpacing: 10 * time.Minute})
			require.NoError(t, err)
			require.Len(t, jobs, 10)
		})
		require.NotEmpty(t, claimed, "claim %d's plans", i+1)
		for _, p := range claimed {
			for _, name := range ahead {
				if strings.Contains(p, " on "+name+" ") {
					t.Fatalf("claim %d reads %s, a jobs' partition of the coming days, in:\n%s", i+1, name, p)
				}
			}
			if strings.Contains(p, " on "+today+" ") {
				readsToday++
			}
		}
	}
	require.Positive(t, readsToday, "plans of the claims that read %s, today's jobs partition", today)
}

// dueScan matches the plan node that walks the due servers in a claim's pass, with its actual
// rows: the servers the walk read, locked or skipped.
var dueScan = regexp.MustCompile(`(?m)^.*Index Scan using (\S+) on servers s\b.*actual rows=(\d+) loops=(\d+)`)

// A claim reads the due servers in the order it claims them, by the index on (next_check_at, id),
// and stops at its limit, however the statistics stand. The servers of one import share one
// next_check_at; once half of them are leased (their next_check_at moved apart), an ANALYZE (the
// autovacuum's, mid-round) has the planner weigh servers_due_idx, on next_check_at alone, with an
// incremental sort above it, as cheap: that plan reads every due server of the shared time to sort
// them and take the limit. Under BenchmarkThroughput 240 of the 385 claims slower than 8 ms walked
// so, 4,747 servers read for 17 taken (migrations/00026_claim_walk_index.sql drops that index).
func TestAClaimAfterAnAnalyzeMidRoundReadsOnlyTheServersItTakes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	dueServers(t, url, 10000)
	other := dbtest.Pool(t, url)
	round := testfactory.Round(ctx, t, other, nil)
	jobs, err := queries.Claim(ctx, other, queries.ClaimParams{RoundID: round, Limit: 5000, MinSpacing: 10 * time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 5000)
	_, err = other.Exec(ctx, "ANALYZE servers")
	require.NoError(t, err)

	pool, plans := explainedPool(t, url, true)
	const limit = 17
	for i := range 3 {
		read := 0
		for _, p := range plans(func() {
			got, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: limit, MinSpacing: 10 * time.Minute})
			require.NoError(t, err)
			require.Len(t, got, limit)
		}) {
			for _, m := range dueScan.FindAllStringSubmatch(p, -1) {
				rows, err := strconv.Atoi(m[2])
				require.NoError(t, err)
				loops, err := strconv.Atoi(m[3])
				require.NoError(t, err)
				read += rows * loops
				assert.Equal(t, "servers_due_order_idx", m[1], "claim %d walks the due servers by", i+1)
			}
		}
		t.Logf("claim %d of %d servers read %d due servers, 5,000 due", i+1, limit, read)
		require.Positive(t, read, "the claim's walk of the due servers, in its plan")
		require.LessOrEqual(t, read, limit, "claim %d reads the servers it takes, not every due one", i+1)
	}
}
