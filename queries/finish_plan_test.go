package queries_test

import (
	"encoding/json"
	"regexp"
	"strconv"
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

// What a batched finish runs, read from the database itself, as claim_plan_test.go reads the
// claim: auto_explain, on the test's one connection, sends the plan of every statement the finish
// runs (its function's, its triggers', what they call) with its actual rows and loops, as a
// notice. A round of batches of a few hundred jobs, under the planner's default JIT settings
// (PostgreSQL's, and Debian's: JIT on), is held to migrations/00023_finish_plan.sql:
//
//   - no statement is JIT-compiled (the alerts' statement trigger, costed past every JIT
//     threshold, spent 1.6 s compiling for 37 ms of work under BenchmarkThroughput);
//   - no partition of probe_jobs is read by a Seq Scan (each job is one probe of its key: the
//     merge join read and sorted every job of the day for each batch);
//   - no CTE is scanned once per row (the answer's join of the runs inserted to the jobs, and its
//     look-ups of the servers advanced and the jobs closed, were CTE scans looped per job:
//     quadratic in the batch).
func TestABatchedFinishIsNotJITCompiledAndReadsEachJobByItsKey(t *testing.T) {
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
	const servers, batch = 3000, 300
	_, err := pool.Exec(ctx, `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
	    SELECT 'plan-' || g, 'https://plan-' || g || '.example/', 'http', 'standard', interval '12 hours', now() - interval '1 hour'
	      FROM generate_series(1, $1::int) AS g`, servers)
	require.NoError(t, err)
	for _, set := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice",
		"SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off"} {
		_, err := pool.Exec(ctx, set)
		require.NoError(t, err)
	}
	var jit bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_jit_available() AND current_setting('jit')::boolean").Scan(&jit))
	if !jit {
		t.Log("this server has no JIT: the finish's JIT setting is not exercised")
	}

	ok, err := json.Marshal(map[string]any{"outcome": "ok", "summary": "ok", "requests": []any{}})
	require.NoError(t, err)
	failed, err := json.Marshal(map[string]any{"outcome": "failed", "summary": "failed", "requests": []any{}})
	require.NoError(t, err)
	round := testfactory.Round(ctx, t, pool, nil)
	loops := regexp.MustCompile(`CTE Scan on (\w+).*loops=(\d+)`)
	// Every batch is judged: the first finds no alert state (every run is judged alone), the
	// later ones are planned generically by PL/pgSQL after five, with the day's jobs growing.
	for b := range servers / batch {
		jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: batch})
		require.NoError(t, err)
		require.Len(t, jobs, batch)
		at := time.Now()
		ps := make([]queries.FinishParams, len(jobs))
		for i, j := range jobs {
			ps[i] = queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID, ClaimedNextCheckAt: j.ClaimedNextCheckAt,
				Outcome: "ok", Result: ok, StartedAt: at, CheckFinishedAt: at, Requests: 1, Kind: j.Kind,
				RequestedAt: &j.RequestedAt}
			if i%20 == 0 {
				ps[i].Outcome, ps[i].Result = "failed", failed
			}
		}
		mu.Lock()
		notices = nil
		mu.Unlock()
		out, err := queries.FinishBatch(ctx, pool, ps)
		require.NoError(t, err)
		for _, o := range out {
			require.NoError(t, o.Err)
			require.True(t, o.Result.JobFinished)
		}

		mu.Lock()
		plans := notices
		mu.Unlock()
		require.NotEmpty(t, plans, "batch %d: auto_explain's plans", b)
		for _, p := range plans {
			assert.NotContains(t, p, "JIT:", "batch %d: a statement of the finish is JIT-compiled:\n%s", b, p)
			assert.NotContains(t, p, "Seq Scan on probe_jobs", "batch %d: a probe_jobs partition read whole:\n%s", b, p)
			for _, m := range loops.FindAllStringSubmatch(p, -1) {
				n, err := strconv.Atoi(m[2])
				require.NoError(t, err)
				assert.LessOrEqual(t, n, 1, "batch %d: CTE %s scanned once per row:\n%s", b, m[1], p)
			}
		}
		if t.Failed() {
			return
		}
		if b == 0 {
			var finish string
			for _, p := range plans {
				if strings.Contains(p, "Insert on probe_runs") {
					finish = p
				}
			}
			require.NotEmpty(t, finish, "the finish's statement")
		}
	}
}
