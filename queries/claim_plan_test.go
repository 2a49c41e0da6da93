package queries_test

import (
	"strings"
	"sync"
	"testing"
	"time"

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
	var mu sync.Mutex
	var notices []string
	pool := dbtest.Pool(t, migrated.NewDB(t), dbtest.MaxConns(1), func(c *pgxpool.Config) {
		c.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			defer mu.Unlock()
			notices = append(notices, n.Message)
		}
	})
	_, err := pool.Exec(ctx, `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
	    SELECT 'plan-' || g, 'https://plan-' || g || '.example/', 'http', 'standard', interval '12 hours', now() - interval '1 hour'
	      FROM generate_series(1, 10000) AS g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE servers")
	require.NoError(t, err)
	// jit_above_cost 0: every statement of the session JIT-compiles unless it turns JIT off, as
	// the claim does (a claim of 50 servers is costed as the whole due range, past the default
	// jit_above_cost, and compiling it cost more than running it under BenchmarkThroughput).
	for _, set := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice", "SET jit_above_cost = 0"} {
		_, err := pool.Exec(ctx, set)
		require.NoError(t, err)
	}
	round := testfactory.Round(ctx, t, pool, nil)
	plans := func(claim func()) []string {
		mu.Lock()
		notices = nil
		mu.Unlock()
		claim()
		mu.Lock()
		defer mu.Unlock()
		// The claim's own statements: not the foreign keys' checks nor the open-job trigger's
		// insert, which run per job inserted, whichever claim inserts it.
		var own []string
		for _, n := range notices {
			if !strings.Contains(n, "SELECT 1 FROM ONLY") && !strings.Contains(n, "VALUES (NEW.id") {
				own = append(own, n)
			}
		}
		return own
	}

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
