package queries_test

import (
	"cmp"
	"context"
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
//   - no node run once per row reads more than a few rows each time (the alerts' trigger updated
//     the states by a nested loop over every state, costed for 800 policies a run).
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
	perLoop := regexp.MustCompile(`->  (.*?)  \(cost=.*\(actual rows=(\d+) loops=(\d+)\)`)
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
		nodes := 0 // the plan nodes the per-loop check judged, so that it cannot pass by judging none
		for _, p := range plans {
			assert.NotContains(t, p, "JIT:", "batch %d: a statement of the finish is JIT-compiled:\n%s", b, p)
			assert.NotContains(t, p, "Seq Scan on probe_jobs", "batch %d: a probe_jobs partition read whole:\n%s", b, p)
			for _, m := range loops.FindAllStringSubmatch(p, -1) {
				n, err := strconv.Atoi(m[2])
				require.NoError(t, err)
				assert.LessOrEqual(t, n, 1, "batch %d: CTE %s scanned once per row:\n%s", b, m[1], p)
			}
			for _, m := range perLoop.FindAllStringSubmatch(p, -1) {
				nodes++
				rows, err := strconv.Atoi(m[2])
				require.NoError(t, err)
				n, err := strconv.Atoi(m[3])
				require.NoError(t, err)
				assert.False(t, n > 20 && rows > 20, "batch %d: %s reads %d rows on each of %d loops:\n%s", b, m[1], rows, n, p)
			}
		}
		require.Positive(t, nodes, "batch %d: plan nodes with their actual rows and loops, in auto_explain's plans", b)
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

// A batch locks its jobs in id order whatever its own order (two batches never wait for each
// other in a cycle), now that each job is locked by its own probe of its key: a batch naming its
// jobs high id first, waiting for the higher job's row, already holds the lower one's.
func TestABatchLocksItsJobsInIdOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	low, _ := claimOne(t, pool)
	high, _ := claimOne(t, pool)
	require.Less(t, low.JobID, high.JobID)
	at := now.Add(3 * time.Second)

	held, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer held.Rollback(ctx) //nolint:errcheck // ended below
	_, err = held.Exec(ctx, "SELECT 1 FROM probe_jobs WHERE id = $1 FOR UPDATE", high.JobID)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		out, err := queries.FinishBatch(context.Background(), pool,
			[]queries.FinishParams{finishParams(high, at), finishParams(low, at)})
		for _, o := range out {
			err = cmp.Or(err, o.Err)
		}
		done <- err
	}()
	dbtest.WaitForLockWait(t, pool, "probe_finish_many", "the batch never waited for the job held")

	_, err = pool.Exec(ctx, "SELECT 1 FROM probe_jobs WHERE id = $1 FOR UPDATE NOWAIT", low.JobID)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the lower job's row is already held by the batch while it waits for the higher one")
	require.Equal(t, "55P03", pgErr.Code) // lock_not_available

	require.NoError(t, held.Rollback(ctx))
	require.NoError(t, <-done)
}

// 00023 rolls back and forth, and a batch finishes on either side (the previous binary calls
// probe_finish_many too): after it, every function a finish runs has JIT off; before it, none
// but the claim's.
func TestTheFinishPlanMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	jitOff := func() (names []string) {
		rows, err := pool.Query(ctx, `SELECT p.proname FROM pg_proc AS p
			WHERE p.pronamespace = 'public'::regnamespace AND 'jit=off' = ANY (p.proconfig) ORDER BY 1`)
		require.NoError(t, err)
		for rows.Next() {
			var n string
			require.NoError(t, rows.Scan(&n))
			names = append(names, n)
		}
		require.NoError(t, rows.Err())
		return names
	}
	finishes := func() {
		a, _ := claimOne(t, pool)
		b, _ := claimOne(t, pool)
		at := now.Add(time.Second)
		out, err := queries.FinishBatch(ctx, pool, []queries.FinishParams{finishParams(b, at), finishParams(a, at)})
		require.NoError(t, err)
		require.Len(t, out, 2)
		for _, o := range out {
			require.NoError(t, o.Err)
			require.True(t, o.Result.JobFinished)
			require.True(t, o.Result.Advanced)
		}
		require.Greater(t, out[1].Result.RunID, int64(0))
		require.Less(t, out[1].Result.RunID, out[0].Result.RunID, "the runs' ids in job id order")
	}
	// (the claim's probe_claim_due has it since 00021)
	finish := []string{"alert_emit", "alert_judge_round", "alert_rounds_end", "alert_settle_held",
		"probe_close_abandoned", "probe_finish", "probe_finish_many", "probe_runs_alert_batch", "probe_runs_alert_run",
		"probe_runs_rollup_batch", "probe_runs_rollup_run"}
	require.Subset(t, jitOff(), finish)
	finishes()
	_, err := p.DownTo(ctx, finishPlanVersion-1)
	require.NoError(t, err)
	require.Equal(t, []string{"probe_claim_due"}, jitOff(), "as 00022 left them")
	finishes()
	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.Subset(t, jitOff(), finish)
	finishes()
}

const finishPlanVersion = 23

// The runs' ids are drawn in the batch's reading of its jobs now, before its writes, no longer by
// its insert: a batch that has drawn them and not committed (here it waits for a server's row)
// is still among the transactions an export waits for (archive.Export: RunIDsDrawn, then
// OpenTransactions), so that no run below the export's reach commits after the export read.
func TestABatchThatDrewItsRunsIdsIsOneTheExportWaitsFor(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	j, _ := claimOne(t, pool)

	long, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer long.Rollback(ctx) //nolint:errcheck // ended below
	_, err = long.Exec(ctx, "UPDATE servers SET slug = slug WHERE id = $1", j.ServerID)
	require.NoError(t, err)
	var pid int
	var vxid string
	got := make(chan queries.BatchFinish, 1)
	go func() {
		conn, err := pool.Acquire(context.Background())
		if err != nil {
			got <- queries.BatchFinish{Err: err}
			return
		}
		defer conn.Release()
		out, err := queries.FinishBatch(context.Background(), conn, []queries.FinishParams{finishParams(j, now.Add(time.Second))})
		if err != nil {
			got <- queries.BatchFinish{Err: err}
			return
		}
		got <- out[0]
	}()
	waiting := func() bool {
		err := pool.QueryRow(ctx, `SELECT a.pid, l.virtualxid FROM pg_stat_activity AS a
			JOIN pg_locks AS l ON l.pid = a.pid AND l.locktype = 'virtualxid'
			WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.query LIKE '%probe_finish_many%'`).Scan(&pid, &vxid)
		return err == nil
	}
	require.Eventually(t, waiting, 30*time.Second, 5*time.Millisecond, "the batch never waited for the server's row")

	drawn, err := queries.RunIDsDrawn(ctx, pool)
	require.NoError(t, err)
	open, err := queries.OpenTransactions(ctx, pool)
	require.NoError(t, err)
	require.Contains(t, open, vxid, "the batch (pid %d) is waited for", pid)

	require.NoError(t, long.Rollback(ctx))
	res := <-got
	require.NoError(t, res.Err)
	require.LessOrEqual(t, res.Result.RunID, drawn, "its run's id was drawn before it waited")
}
