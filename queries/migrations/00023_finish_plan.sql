-- +goose Up
-- A batched finish's plan: no JIT, one index probe per job, and no join of its writes to each
-- other (issue 25).
--
-- Measured by the integrator with auto_explain and pg_stat_statements under BenchmarkThroughput
-- (10,000 servers, 20 invocations, PostgreSQL 15 as Debian ships it, JIT on):
--
-- 1. JIT. The alerts' statement trigger (probe_runs_alert_batch, 00020) reads a batch's runs with
--    their jobs, rounds, states and alert_policy, a table never analysed and so costed at 800 rows:
--    ~737,000 for a batch of 219 runs, past jit_above_cost, jit_inline_above_cost and
--    jit_optimize_above_cost. Compiling it took 1,629 ms (254 functions: optimization 961 ms,
--    emission 549 ms) for a statement that ran in ~37 ms, and whether a batch crossed the
--    thresholds depended on its size. With jit = off for the cluster the same round went from 657
--    to 3,249 servers/s (HTTP GET) and from 396 to 4,108 (no-op). No statement a finish runs reads
--    more than its batch (at most queries.MaxFinishBatch runs) by key: nothing JIT could pay for.
--    So every function a finish runs sets jit = off for its own statements and what it calls
--    (a trigger fired by them included): the batched finish and the previous binary's
--    probe_finish, the statement triggers and the per-run bodies they call, alert_emit and
--    alert_settle_held (called by those bodies, and by the dead-round judgement), and what runs
--    once per round on its path: probe_close_abandoned (a round's start) and alert_rounds_end with
--    alert_judge_round (its end). probe_claim_due has it already (00021). The row triggers
--    (probe_runs_once, probe_jobs_open, alert_states_for_server) are left as they are: each runs
--    statements of one key, costed far below the thresholds, and a SET on a function costs its
--    every call a settings save and restore.
--
-- 2. probe_finish_many's answer joined its insert of the runs to its jobs (LEFT JOIN run ON
--    run.job_id = k.job_id) and looked up the advanced servers and closed jobs with a subplan per
--    job: the job CTE (an inner join on three columns) was estimated at one row, and so were the
--    writes, so each was a CTE scan looped once per job (250,000 comparisons, ~45 ms of a 62 ms
--    statement for a batch of 500: quadratic in the batch). Now the
--    runs' ids are drawn in the job CTE (nextval of the runs' sequence, in job id order as the
--    insert drew them) and inserted as given, and the answer reads the writes' RETURNING rows
--    through sorts (a window per server and per job), whatever the estimates: no join at all.
--    Every id is still drawn inside the statement of a transaction that holds its job's row lock
--    (it has a transaction id), which is what the export's wait for the run ids drawn and not
--    committed assumes (queries/export.sql OpenTransactions).
--
-- 3. The lock and the job CTE merge-joined the batch with a Seq Scan of every probe_jobs partition,
--    sorted (9,780 rows for a batch of 500, growing with the day's jobs). Each job is now found by
--    its key (id, server, claim time) in a LATERAL subquery: an index probe per job and
--    partition, run-time pruning leaving the partitions of other days unread; the lock in id
--    order as before (the batch sorted by id drives the probes). A stored run is looked up by the runs' job_id keys: min(id) over the
--    job's runs, which the planner had turned into a walk of every partition's primary key in id
--    order, filtered by job: every run of the partition read for a job that has none (all of them).
--
-- 4. The rollups' statement trigger (probe_runs_rollup_batch) gathered each key's buckets with a
--    subquery per (kind, outcome, shard) that scanned the statement's runs once per key and bound
--    (180 scans of 300 runs for a batch of 300): the buckets are now gathered by one aggregate.
--
-- 5. The alerts' statement trigger (probe_runs_alert_batch) joined alert_policy (one row, never
--    analysed, costed at 800) to every run: the statement was costed past the JIT thresholds (1
--    above), and the planner, expecting 120,000 rows, updated the states by a nested loop over a
--    materialized scan of every state (1,920 states read for each of 300 runs: 30.8 ms of a
--    batch's statement at 3,000 servers, quadratic in batch and servers; 3.8 ms now). The
--    policy is read once, into variables, before the statement.
--
-- Every judgement is as 00020's: a job closed meanwhile gets a late run and neither advances nor
-- closes; a replay changes nothing and answers with the run stored; a job that is not the claim
-- named stores nothing and answers with no run. Same signature and answers: the previous binary
-- calls it too. queries/finish_plan_test.go holds the plans to 1 to 5.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_finish_many(
    p_job_ids           bigint[],
    p_server_ids        bigint[],
    p_requested_ats     timestamptz[],
    p_claimed           timestamptz[],
    p_outcomes          text[],
    p_errors            text[],
    p_started_ats       timestamptz[],
    p_check_finished_at timestamptz[],
    p_requests          integer[],
    p_results           jsonb[],
    p_envelopes         jsonb[],
    p_now               timestamptz DEFAULT NULL
) RETURNS TABLE (
    ord          integer,
    job_id       bigint,
    run_id       bigint,
    advanced     boolean,
    job_finished boolean,
    finished_at  timestamptz
)
LANGUAGE plpgsql VOLATILE
SET jit = off
AS $probe$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_n   integer := coalesce(cardinality(p_job_ids), 0);
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;
    IF coalesce(cardinality(p_server_ids), -1) <> v_n OR coalesce(cardinality(p_requested_ats), -1) <> v_n
       OR coalesce(cardinality(p_claimed), -1) <> v_n OR coalesce(cardinality(p_outcomes), -1) <> v_n
       OR coalesce(cardinality(p_errors), -1) <> v_n OR coalesce(cardinality(p_started_ats), -1) <> v_n
       OR coalesce(cardinality(p_check_finished_at), -1) <> v_n OR coalesce(cardinality(p_requests), -1) <> v_n
       OR coalesce(cardinality(p_results), -1) <> v_n OR coalesce(cardinality(p_envelopes), -1) <> v_n THEN
        RAISE EXCEPTION 'probe_finish_many: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One answer per job: a job named twice would be judged twice against one snapshot.
    IF (SELECT count(DISTINCT u.id) FROM unnest(p_job_ids) AS u(id)) <> v_n THEN
        RAISE EXCEPTION 'probe_finish_many: a job is named twice' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Each job is found in its partition by its claim time; a finish without one is probe_finish's.
    IF EXISTS (SELECT 1 FROM unnest(p_requested_ats) AS u(t) WHERE u.t IS NULL) THEN
        RAISE EXCEPTION 'probe_finish_many: a job without its claim time' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The jobs' rows are locked, in id order (two batches never wait for each other in a cycle):
    -- a claim closing one as abandoned waits for this finish, or this finish sees it closed. The
    -- next statement reads them after the locks, as probe_finish does. The batch, sorted by id,
    -- drives one index probe per job (its id, server and claim time), each locking the row it finds.
    PERFORM 1
       FROM (SELECT u.job_id, u.server_id, u.requested_at
               FROM unnest(p_job_ids, p_server_ids, p_requested_ats) AS u(job_id, server_id, requested_at)
              ORDER BY u.job_id) AS i
      CROSS JOIN LATERAL (SELECT 1 FROM probe_jobs AS j
                           WHERE j.id = i.job_id AND j.requested_at = i.requested_at AND j.server_id = i.server_id
                             FOR UPDATE) AS l;

    RETURN QUERY
    WITH job AS (
        -- Every job of the batch, found or not: only the claim named (its id, server and time); a
        -- replay finds its run stored already (runs stored before 00017 are keyed -infinity, a
        -- previous binary's advance-first NULL; two, stored before 00019's probe_runs_once: the
        -- first). A run to store has its id drawn here, in job id order.
        SELECT k.*, CASE WHEN k.found AND k.stored_run IS NULL THEN nextval('probe_runs_id_seq') END AS new_run
          FROM (SELECT i.*, j.found IS NOT NULL AS found, coalesce(j.open, false) AS open, j.stored_run
                  FROM unnest(p_job_ids, p_server_ids, p_requested_ats, p_claimed, p_outcomes, p_errors, p_started_ats,
                              p_check_finished_at, p_requests, p_results, p_envelopes)
                       WITH ORDINALITY AS i(job_id, server_id, requested_at, claimed, outcome, error, started_at,
                                            check_finished_at, requests, result, envelope, ord)
                  -- a probe per job: LIMIT 1 keeps the planner from pulling it up into a join it may
                  -- merge with a Seq Scan of every partition (the job's id and time are its key)
                  LEFT JOIN LATERAL (
                        SELECT true AS found, pj.finished_at IS NULL AS open,
                               -- OFFSET 0: the runs of this job by their job_id keys, not a walk of
                               -- every run in id order (min's index plan)
                               (SELECT min(r.id) FROM (SELECT r.id FROM probe_runs AS r
                                                        WHERE r.job_id = pj.id
                                                          AND (r.job_requested_at = pj.requested_at
                                                               OR r.job_requested_at = '-infinity'
                                                               OR r.job_requested_at IS NULL)
                                                       OFFSET 0) AS r) AS stored_run
                          FROM probe_jobs AS pj
                         WHERE pj.id = i.job_id AND pj.requested_at = i.requested_at AND pj.server_id = i.server_id
                         LIMIT 1) AS j ON true
                 ORDER BY i.job_id) AS k
    ), advanced AS (
        -- (a) Advance, only while the job is open, as a compare-and-set on the claimed value.
        UPDATE servers AS s
           SET next_check_at = v_now + s.check_interval
          FROM job AS k
         WHERE k.open AND k.stored_run IS NULL
           AND s.id = k.server_id
           AND s.next_check_at = k.claimed
           AND s.status = 'active'
        RETURNING s.id
    ), run AS (
        -- (b) The run, whatever the guards say; late when the job was closed meanwhile.
        INSERT INTO probe_runs AS r (id, job_id, job_requested_at, server_id, started_at, finished_at, requests,
                                     result, envelope, late)
        SELECT k.new_run, k.job_id, k.requested_at, k.server_id, k.started_at, k.check_finished_at, k.requests,
               k.result, k.envelope, NOT k.open
          FROM job AS k
         WHERE k.new_run IS NOT NULL
         ORDER BY k.new_run
    ), closed AS (
        -- (c) Finish the jobs still open.
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = k.outcome,
               error       = nullif(k.error, '')
          FROM job AS k
         WHERE k.open AND k.stored_run IS NULL
           AND j.id = k.job_id
           AND j.requested_at = k.requested_at
        RETURNING j.id
    ), said AS (
        -- The jobs, and the writes' rows beside them: a job is advanced when its server was (the
        -- compare-and-set of the server's only open job), finished when it was closed.
        SELECT k.ord, k.job_id, k.server_id, coalesce(k.stored_run, k.new_run) AS run_id,
               k.open AND k.stored_run IS NULL AS judged, false AS advanced, false AS closed
          FROM job AS k
        UNION ALL
        SELECT NULL, NULL, a.id, NULL, NULL, true, false FROM advanced AS a
        UNION ALL
        SELECT NULL, c.id, NULL, NULL, NULL, false, true FROM closed AS c
    )
    SELECT w.ord::integer, w.job_id, w.run_id, w.advanced, w.job_finished, v_now
      FROM (SELECT s.ord, s.job_id, s.run_id,
                   coalesce(s.judged AND bool_or(s.advanced) OVER (PARTITION BY s.server_id), false) AS advanced,
                   coalesce(s.judged AND bool_or(s.closed) OVER (PARTITION BY s.job_id), false) AS job_finished
              FROM said AS s) AS w
     WHERE w.ord IS NOT NULL
     ORDER BY w.ord;
END
$probe$;
-- +goose StatementEnd

-- The rollups' statement trigger, as 00020's but for its totals (see 4 above), and with jit = off.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_rollup_batch() RETURNS trigger
LANGUAGE plpgsql
SET jit = off
AS $probe$
DECLARE
    v_servers bigint[];
    v_multi   bigint[];
    v_run     record;
    v_one     probe_runs;
BEGIN
    IF (SELECT count(*) FROM new_runs) = 1 THEN
        SELECT n.* INTO v_one FROM new_runs AS n;
        PERFORM probe_runs_rollup_run(v_one);
        RETURN NULL;
    END IF;

    -- Every run counts in the totals, one upsert per (kind, outcome, shard), in key order. The
    -- buckets are counted per key and bound, then gathered per key: each bound's group holds every
    -- run of its key once, so its count and sum are the key's (no look-up of one group per other,
    -- which scanned the runs once per key and bound).
    WITH r AS (
        SELECT s.kind, coalesce(n.result->>'outcome', '') AS outcome, (n.server_id % 16)::smallint AS shard,
               greatest(extract(epoch FROM n.finished_at - n.started_at), 0)::double precision AS secs
          FROM new_runs AS n
          JOIN servers AS s ON s.id = n.server_id
    ), b AS (
        SELECT r.kind, r.outcome, r.shard, u.i, count(*) FILTER (WHERE r.secs <= u.b) AS n,
               count(*) AS runs, sum(r.secs) AS secs
          FROM r CROSS JOIN unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i)
         GROUP BY r.kind, r.outcome, r.shard, u.i
    ), g AS (
        SELECT b.kind, b.outcome, b.shard, max(b.runs) AS runs, max(b.secs) AS secs,
               array_agg(b.n ORDER BY b.i) AS buckets
          FROM b GROUP BY b.kind, b.outcome, b.shard
    )
    INSERT INTO run_totals AS t (kind, outcome, shard, runs, seconds_sum, buckets)
    SELECT g.kind, g.outcome, g.shard, g.runs, g.secs, g.buckets
      FROM g
     ORDER BY g.kind, g.outcome, g.shard
    ON CONFLICT (kind, outcome, shard) DO UPDATE
       SET runs        = t.runs + EXCLUDED.runs,
           seconds_sum = t.seconds_sum + EXCLUDED.seconds_sum,
           buckets     = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i);

    -- The runs that say something about their server: not at probectl's fault (fenced,
    -- interrupted, or late: its job was closed as abandoned before it came). The job is read in its
    -- partition when the run carries its key; a run without it looks in every partition.
    WITH f AS (
        SELECT n.id, n.server_id, n.started_at, coalesce(n.result->>'outcome', '') AS outcome,
               (jsonb_path_query_first(n.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz AS cert,
               count(*) OVER (PARTITION BY n.server_id) AS per_server
          FROM new_runs AS n
          LEFT JOIN LATERAL (
                SELECT k.outcome, true AS found FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND k.requested_at = n.job_requested_at AND n.job_requested_at <> '-infinity'
                UNION ALL
                SELECT k.outcome, true FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND (n.job_requested_at IS NULL OR n.job_requested_at = '-infinity')
                 LIMIT 1
               ) AS j ON true
         -- as the row trigger: a run whose job is not found is counted
         WHERE NOT coalesce(n.result->>'fault' IS NOT DISTINCT FROM 'probectl'
                            OR n.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
                            OR j.outcome IS NOT DISTINCT FROM 'abandoned', false)
            OR j.found IS NULL
    ), days AS (
        INSERT INTO server_run_days AS d (server_id, day, ok, counted)
        SELECT f.server_id, (f.started_at AT TIME ZONE 'UTC')::date, count(*) FILTER (WHERE f.outcome = 'ok'), count(*)
          FROM f
         GROUP BY 1, 2
         ORDER BY 1, 2
        ON CONFLICT (server_id, day) DO UPDATE
           SET ok = d.ok + EXCLUDED.ok, counted = d.counted + EXCLUDED.counted
    ), latest AS (
        -- A server with one run in the statement (nearly always): its rollup in one upsert.
        INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
        SELECT f.server_id, f.id, f.started_at, f.outcome,
               CASE WHEN f.outcome = 'ok' THEN NULL ELSE f.started_at END, f.cert
          FROM f
         WHERE f.per_server = 1
         ORDER BY f.server_id
        ON CONFLICT (server_id) DO UPDATE
           SET last_run_id    = EXCLUDED.last_run_id,
               last_run_at    = EXCLUDED.last_run_at,
               last_outcome   = EXCLUDED.last_outcome,
               failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                     ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
               cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
         -- a run stored out of order (a replayed spool) counts in its day but does not replace a newer one
         WHERE r.last_run_at <= EXCLUDED.last_run_at
    )
    SELECT array_agg(DISTINCT f.server_id ORDER BY f.server_id),
           array_agg(f.id ORDER BY f.server_id, f.id) FILTER (WHERE f.per_server > 1)
      INTO v_servers, v_multi
      FROM f;

    -- A server with more runs in the statement: its rollup follows them one at a time, in order.
    FOR v_run IN
        SELECT n.id, n.server_id, n.started_at, coalesce(n.result->>'outcome', '') AS outcome,
               (jsonb_path_query_first(n.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz AS cert
          FROM new_runs AS n
         WHERE n.id = ANY (v_multi)
         ORDER BY n.server_id, n.id
    LOOP
        INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
        VALUES (v_run.server_id, v_run.id, v_run.started_at, v_run.outcome,
                CASE WHEN v_run.outcome = 'ok' THEN NULL ELSE v_run.started_at END, v_run.cert)
        ON CONFLICT (server_id) DO UPDATE
           SET last_run_id    = EXCLUDED.last_run_id,
               last_run_at    = EXCLUDED.last_run_at,
               last_outcome   = EXCLUDED.last_outcome,
               failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                     ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
               cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
         WHERE r.last_run_at <= EXCLUDED.last_run_at;
    END LOOP;

    IF v_servers IS NOT NULL THEN
        UPDATE server_rollups AS r
           SET uptime_30d = (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                               FROM server_run_days AS d
                              WHERE d.server_id = r.server_id
                                AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
         WHERE r.server_id = ANY (v_servers);
    END IF;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- The alerts' statement trigger, as 00020's but for the policy, read once (see 5 above), and with
-- jit = off.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_alert_batch() RETURNS trigger
LANGUAGE plpgsql
SET jit = off
AS $probe$
DECLARE
    v_slow  bigint[];
    v_multi boolean;
    v_run   probe_runs;
    v_up    integer;
    v_down  integer;
BEGIN
    -- The policy (one row, or none: the defaults), read once: joined to every run, the table
    -- (never analysed) was costed at 800 rows a run, which took the statement below past every JIT
    -- threshold and made the planner scan every state once per run it updates.
    SELECT p.up_after, p.down_after INTO v_up, v_down FROM alert_policy AS p;

    -- The servers' states are taken in server order, all before any is written (by their key:
    -- not a scan of every state).
    PERFORM 1 FROM alert_states AS a
     WHERE a.server_id = ANY (ARRAY(SELECT n.server_id FROM new_runs AS n))
     ORDER BY a.server_id
       FOR UPDATE;

    WITH x AS (
        -- What the row trigger reads of each run (its result's fields, its job, its round, its
        -- server's state), for the servers with one run in the statement; a server with more is
        -- judged run by run below, each run seeing the state the one before left.
        SELECT n.id, n.server_id, n.started_at, j.round_id, s.kind,
               coalesce(n.result->>'outcome', '') AS outcome,
               nullif(n.result->>'tools_fingerprint', '') AS tools_fingerprint,
               coalesce(n.result->>'server_version', '') AS server_version,
               coalesce(nullif(n.result->>'auth', ''), 'none') AS auth,
               coalesce(v_up, 1) AS up_after, coalesce(v_down, 2) AS down_after,
               a.state, a.consecutive_ok, a.consecutive_failed, a.streak_runs, a.held_round_id, a.changed_at,
               a.tools_fingerprint AS last_tools, a.server_version AS last_version, a.auth AS last_auth,
               pr.finished_at AS round_finished_at,
               -- the row trigger's reasons to leave a run out
               (coalesce(n.result->>'outcome', '') IN ('ok', 'failed', 'error')
                AND n.result->>'fault' IS DISTINCT FROM 'probectl'
                AND n.result->>'summary' IS DISTINCT FROM 'interrupted'
                AND j.outcome IS DISTINCT FROM 'abandoned'
                AND NOT coalesce(a.last_run_at > n.started_at, false)) AS judged
          FROM new_runs AS n
          JOIN LATERAL (
                SELECT k.round_id, k.outcome, k.server_id FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND k.requested_at = n.job_requested_at AND n.job_requested_at <> '-infinity'
                UNION ALL
                SELECT k.round_id, k.outcome, k.server_id FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND (n.job_requested_at IS NULL OR n.job_requested_at = '-infinity')
                 LIMIT 1
               ) AS j ON true
          JOIN servers AS s ON s.id = j.server_id
          JOIN alert_states AS a ON a.server_id = n.server_id
          LEFT JOIN probe_rounds AS pr ON pr.id = j.round_id
         WHERE NOT EXISTS (SELECT 1 FROM new_runs AS m WHERE m.server_id = n.server_id AND m.id <> n.id)
    ), fast AS (
        -- The runs judged here, and how (see above); a failure held from its own round before the
        -- run is superseded by it (ok) or replaced by it (held), as in the row trigger.
        SELECT x.*,
               CASE WHEN x.outcome = 'ok' THEN 'ok'
                    WHEN x.round_id IS NOT NULL AND x.round_finished_at IS NULL THEN 'held'
                    ELSE 'counted' END AS how
          FROM x
         WHERE x.judged
           AND (x.held_round_id IS NULL OR x.held_round_id = x.round_id)
           AND CASE WHEN x.outcome = 'ok' THEN
                        (x.state <> 'down' OR x.consecutive_ok + 1 < x.up_after)
                        AND (x.tools_fingerprint IS NULL OR x.last_tools IS NULL OR x.last_tools = x.tools_fingerprint)
                        AND (x.last_auth IS NULL OR x.last_auth = x.auth)
                    WHEN x.round_id IS NOT NULL AND x.round_finished_at IS NULL THEN true
                    ELSE (x.state = 'down' OR x.consecutive_failed + 1 < x.down_after)
                         AND NOT EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = x.round_id)
               END
    ), tally AS (
        -- The storm guard's tallies of every judged run of these servers, one upsert per key, in key order.
        INSERT INTO alert_round_tallies AS t (round_id, kind, outcome, shard, runs)
        SELECT x.round_id, x.kind, x.outcome, (x.server_id % 16)::smallint, count(*)
          FROM x
         WHERE x.judged AND x.round_id IS NOT NULL
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (round_id, kind, outcome, shard) DO UPDATE SET runs = t.runs + EXCLUDED.runs
    ), moved AS (
        UPDATE alert_states AS a
           SET state              = CASE WHEN f.how = 'ok' AND f.consecutive_ok + 1 >= f.up_after THEN 'up' ELSE f.state END,
               changed_at         = CASE WHEN f.how = 'ok' AND f.consecutive_ok + 1 >= f.up_after AND f.state <> 'up'
                                         THEN now() ELSE f.changed_at END,
               consecutive_ok     = CASE f.how WHEN 'ok' THEN f.consecutive_ok + 1
                                               WHEN 'counted' THEN 0 ELSE f.consecutive_ok END,
               consecutive_failed = CASE f.how WHEN 'ok' THEN 0
                                               WHEN 'counted' THEN f.consecutive_failed + 1 ELSE f.consecutive_failed END,
               streak_runs        = CASE WHEN f.how = 'held' THEN f.streak_runs
                                         WHEN (f.how = 'ok' AND f.consecutive_ok = 0)
                                              OR (f.how = 'counted' AND f.consecutive_failed = 0) THEN ARRAY[f.id]
                                         ELSE (f.streak_runs || f.id)[greatest(1, cardinality(f.streak_runs) - 8):] END,
               held_round_id      = CASE f.how WHEN 'ok' THEN NULL WHEN 'held' THEN f.round_id ELSE a.held_round_id END,
               held_run_id        = CASE f.how WHEN 'ok' THEN NULL WHEN 'held' THEN f.id ELSE a.held_run_id END,
               last_run_id        = f.id,
               last_run_at        = f.started_at,
               -- what the server says it is, from its answers (ok runs only)
               tools_fingerprint  = CASE WHEN f.how = 'ok' THEN coalesce(f.tools_fingerprint, f.last_tools)
                                         ELSE f.last_tools END,
               server_version     = CASE WHEN f.how = 'ok' AND f.tools_fingerprint IS NOT NULL THEN f.server_version
                                         ELSE f.last_version END,
               auth               = CASE WHEN f.how = 'ok' THEN f.auth ELSE f.last_auth END
          FROM fast AS f
         WHERE a.server_id = f.server_id
        RETURNING f.id
    )
    SELECT array_agg(x.id ORDER BY x.server_id) FILTER (WHERE x.judged AND x.id NOT IN (SELECT m.id FROM moved AS m)),
           (SELECT count(*) FROM new_runs) > (SELECT count(*) FROM x)
      INTO v_slow, v_multi
      FROM x;

    -- The rest one at a time: runs that may change a state, of servers with one run (tallied above)...
    IF v_slow IS NOT NULL THEN
        FOR v_run IN SELECT n.* FROM new_runs AS n WHERE n.id = ANY (v_slow) ORDER BY n.server_id, n.id LOOP
            PERFORM probe_runs_alert_run(v_run, false);
        END LOOP;
    END IF;
    -- ...and every run of a server with more than one, in order (looked for only when x, which
    -- holds the runs of servers with one, holds fewer runs than the statement).
    IF v_multi THEN
        FOR v_run IN
            SELECT n.* FROM new_runs AS n
             WHERE EXISTS (SELECT 1 FROM new_runs AS m WHERE m.server_id = n.server_id AND m.id <> n.id)
             ORDER BY n.server_id, n.id
        LOOP
            PERFORM probe_runs_alert_run(v_run, true);
        END LOOP;
    END IF;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

ALTER FUNCTION probe_finish(bigint, timestamptz, text, text, timestamptz, timestamptz, integer, jsonb, jsonb, timestamptz)
    SET jit = off;
ALTER FUNCTION probe_runs_rollup_run(probe_runs) SET jit = off;
ALTER FUNCTION probe_runs_alert_run(probe_runs, boolean) SET jit = off;
ALTER FUNCTION alert_emit(text, bigint, text, text, bigint[], bigint, jsonb, timestamptz) SET jit = off;
ALTER FUNCTION alert_settle_held(bigint, integer, integer, integer) SET jit = off;
ALTER FUNCTION alert_rounds_end() SET jit = off;
ALTER FUNCTION alert_judge_round(bigint, integer, integer) SET jit = off;
ALTER FUNCTION probe_close_abandoned(interval, timestamptz) SET jit = off;

-- +goose Down
ALTER FUNCTION probe_close_abandoned(interval, timestamptz) RESET jit;
ALTER FUNCTION alert_judge_round(bigint, integer, integer) RESET jit;
ALTER FUNCTION alert_rounds_end() RESET jit;
ALTER FUNCTION alert_settle_held(bigint, integer, integer, integer) RESET jit;
ALTER FUNCTION alert_emit(text, bigint, text, text, bigint[], bigint, jsonb, timestamptz) RESET jit;
ALTER FUNCTION probe_runs_alert_run(probe_runs, boolean) RESET jit;
ALTER FUNCTION probe_runs_rollup_run(probe_runs) RESET jit;
ALTER FUNCTION probe_finish(bigint, timestamptz, text, text, timestamptz, timestamptz, integer, jsonb, jsonb, timestamptz)
    RESET jit;

-- 00020's probe_runs_alert_batch, as it was.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_alert_batch() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_slow  bigint[];
    v_multi boolean;
    v_run   probe_runs;
BEGIN
    -- The servers' states are taken in server order, all before any is written (by their key:
    -- not a scan of every state).
    PERFORM 1 FROM alert_states AS a
     WHERE a.server_id = ANY (ARRAY(SELECT n.server_id FROM new_runs AS n))
     ORDER BY a.server_id
       FOR UPDATE;

    WITH x AS (
        -- What the row trigger reads of each run (its result's fields, its job, its round, its
        -- server's state), for the servers with one run in the statement; a server with more is
        -- judged run by run below, each run seeing the state the one before left.
        SELECT n.id, n.server_id, n.started_at, j.round_id, s.kind,
               coalesce(n.result->>'outcome', '') AS outcome,
               nullif(n.result->>'tools_fingerprint', '') AS tools_fingerprint,
               coalesce(n.result->>'server_version', '') AS server_version,
               coalesce(nullif(n.result->>'auth', ''), 'none') AS auth,
               coalesce(p.up_after, 1) AS up_after, coalesce(p.down_after, 2) AS down_after,
               a.state, a.consecutive_ok, a.consecutive_failed, a.streak_runs, a.held_round_id, a.changed_at,
               a.tools_fingerprint AS last_tools, a.server_version AS last_version, a.auth AS last_auth,
               pr.finished_at AS round_finished_at,
               -- the row trigger's reasons to leave a run out
               (coalesce(n.result->>'outcome', '') IN ('ok', 'failed', 'error')
                AND n.result->>'fault' IS DISTINCT FROM 'probectl'
                AND n.result->>'summary' IS DISTINCT FROM 'interrupted'
                AND j.outcome IS DISTINCT FROM 'abandoned'
                AND NOT coalesce(a.last_run_at > n.started_at, false)) AS judged
          FROM new_runs AS n
          JOIN LATERAL (
                SELECT k.round_id, k.outcome, k.server_id FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND k.requested_at = n.job_requested_at AND n.job_requested_at <> '-infinity'
                UNION ALL
                SELECT k.round_id, k.outcome, k.server_id FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND (n.job_requested_at IS NULL OR n.job_requested_at = '-infinity')
                 LIMIT 1
               ) AS j ON true
          JOIN servers AS s ON s.id = j.server_id
          JOIN alert_states AS a ON a.server_id = n.server_id
          LEFT JOIN probe_rounds AS pr ON pr.id = j.round_id
          LEFT JOIN alert_policy AS p ON true
         WHERE NOT EXISTS (SELECT 1 FROM new_runs AS m WHERE m.server_id = n.server_id AND m.id <> n.id)
    ), fast AS (
        -- The runs judged here, and how (see above); a failure held from its own round before the
        -- run is superseded by it (ok) or replaced by it (held), as in the row trigger.
        SELECT x.*,
               CASE WHEN x.outcome = 'ok' THEN 'ok'
                    WHEN x.round_id IS NOT NULL AND x.round_finished_at IS NULL THEN 'held'
                    ELSE 'counted' END AS how
          FROM x
         WHERE x.judged
           AND (x.held_round_id IS NULL OR x.held_round_id = x.round_id)
           AND CASE WHEN x.outcome = 'ok' THEN
                        (x.state <> 'down' OR x.consecutive_ok + 1 < x.up_after)
                        AND (x.tools_fingerprint IS NULL OR x.last_tools IS NULL OR x.last_tools = x.tools_fingerprint)
                        AND (x.last_auth IS NULL OR x.last_auth = x.auth)
                    WHEN x.round_id IS NOT NULL AND x.round_finished_at IS NULL THEN true
                    ELSE (x.state = 'down' OR x.consecutive_failed + 1 < x.down_after)
                         AND NOT EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = x.round_id)
               END
    ), tally AS (
        -- The storm guard's tallies of every judged run of these servers, one upsert per key, in key order.
        INSERT INTO alert_round_tallies AS t (round_id, kind, outcome, shard, runs)
        SELECT x.round_id, x.kind, x.outcome, (x.server_id % 16)::smallint, count(*)
          FROM x
         WHERE x.judged AND x.round_id IS NOT NULL
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (round_id, kind, outcome, shard) DO UPDATE SET runs = t.runs + EXCLUDED.runs
    ), moved AS (
        UPDATE alert_states AS a
           SET state              = CASE WHEN f.how = 'ok' AND f.consecutive_ok + 1 >= f.up_after THEN 'up' ELSE f.state END,
               changed_at         = CASE WHEN f.how = 'ok' AND f.consecutive_ok + 1 >= f.up_after AND f.state <> 'up'
                                         THEN now() ELSE f.changed_at END,
               consecutive_ok     = CASE f.how WHEN 'ok' THEN f.consecutive_ok + 1
                                               WHEN 'counted' THEN 0 ELSE f.consecutive_ok END,
               consecutive_failed = CASE f.how WHEN 'ok' THEN 0
                                               WHEN 'counted' THEN f.consecutive_failed + 1 ELSE f.consecutive_failed END,
               streak_runs        = CASE WHEN f.how = 'held' THEN f.streak_runs
                                         WHEN (f.how = 'ok' AND f.consecutive_ok = 0)
                                              OR (f.how = 'counted' AND f.consecutive_failed = 0) THEN ARRAY[f.id]
                                         ELSE (f.streak_runs || f.id)[greatest(1, cardinality(f.streak_runs) - 8):] END,
               held_round_id      = CASE f.how WHEN 'ok' THEN NULL WHEN 'held' THEN f.round_id ELSE a.held_round_id END,
               held_run_id        = CASE f.how WHEN 'ok' THEN NULL WHEN 'held' THEN f.id ELSE a.held_run_id END,
               last_run_id        = f.id,
               last_run_at        = f.started_at,
               -- what the server says it is, from its answers (ok runs only)
               tools_fingerprint  = CASE WHEN f.how = 'ok' THEN coalesce(f.tools_fingerprint, f.last_tools)
                                         ELSE f.last_tools END,
               server_version     = CASE WHEN f.how = 'ok' AND f.tools_fingerprint IS NOT NULL THEN f.server_version
                                         ELSE f.last_version END,
               auth               = CASE WHEN f.how = 'ok' THEN f.auth ELSE f.last_auth END
          FROM fast AS f
         WHERE a.server_id = f.server_id
        RETURNING f.id
    )
    SELECT array_agg(x.id ORDER BY x.server_id) FILTER (WHERE x.judged AND x.id NOT IN (SELECT m.id FROM moved AS m)),
           (SELECT count(*) FROM new_runs) > (SELECT count(*) FROM x)
      INTO v_slow, v_multi
      FROM x;

    -- The rest one at a time: runs that may change a state, of servers with one run (tallied above)...
    IF v_slow IS NOT NULL THEN
        FOR v_run IN SELECT n.* FROM new_runs AS n WHERE n.id = ANY (v_slow) ORDER BY n.server_id, n.id LOOP
            PERFORM probe_runs_alert_run(v_run, false);
        END LOOP;
    END IF;
    -- ...and every run of a server with more than one, in order (looked for only when x, which
    -- holds the runs of servers with one, holds fewer runs than the statement).
    IF v_multi THEN
        FOR v_run IN
            SELECT n.* FROM new_runs AS n
             WHERE EXISTS (SELECT 1 FROM new_runs AS m WHERE m.server_id = n.server_id AND m.id <> n.id)
             ORDER BY n.server_id, n.id
        LOOP
            PERFORM probe_runs_alert_run(v_run, true);
        END LOOP;
    END IF;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- 00020's probe_runs_rollup_batch, as it was.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_rollup_batch() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_servers bigint[];
    v_multi   bigint[];
    v_run     record;
    v_one     probe_runs;
BEGIN
    IF (SELECT count(*) FROM new_runs) = 1 THEN
        SELECT n.* INTO v_one FROM new_runs AS n;
        PERFORM probe_runs_rollup_run(v_one);
        RETURN NULL;
    END IF;

    -- Every run counts in the totals, one upsert per (kind, outcome, shard), in key order.
    WITH r AS (
        SELECT s.kind, coalesce(n.result->>'outcome', '') AS outcome, (n.server_id % 16)::smallint AS shard,
               greatest(extract(epoch FROM n.finished_at - n.started_at), 0)::double precision AS secs
          FROM new_runs AS n
          JOIN servers AS s ON s.id = n.server_id
    ), b AS (
        SELECT r.kind, r.outcome, r.shard, u.i, count(*) FILTER (WHERE r.secs <= u.b) AS n
          FROM r CROSS JOIN unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i)
         GROUP BY r.kind, r.outcome, r.shard, u.i
    ), g AS (
        SELECT r.kind, r.outcome, r.shard, count(*) AS runs, sum(r.secs) AS secs,
               (SELECT array_agg(b.n ORDER BY b.i) FROM b
                 WHERE b.kind = r.kind AND b.outcome = r.outcome AND b.shard = r.shard) AS buckets
          FROM r GROUP BY r.kind, r.outcome, r.shard
    )
    INSERT INTO run_totals AS t (kind, outcome, shard, runs, seconds_sum, buckets)
    SELECT g.kind, g.outcome, g.shard, g.runs, g.secs, g.buckets
      FROM g
     ORDER BY g.kind, g.outcome, g.shard
    ON CONFLICT (kind, outcome, shard) DO UPDATE
       SET runs        = t.runs + EXCLUDED.runs,
           seconds_sum = t.seconds_sum + EXCLUDED.seconds_sum,
           buckets     = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i);

    -- The runs that say something about their server: not at probectl's fault (fenced,
    -- interrupted, or late: its job was closed as abandoned before it came). The job is read in its
    -- partition when the run carries its key; a run without it looks in every partition.
    WITH f AS (
        SELECT n.id, n.server_id, n.started_at, coalesce(n.result->>'outcome', '') AS outcome,
               (jsonb_path_query_first(n.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz AS cert,
               count(*) OVER (PARTITION BY n.server_id) AS per_server
          FROM new_runs AS n
          LEFT JOIN LATERAL (
                SELECT k.outcome, true AS found FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND k.requested_at = n.job_requested_at AND n.job_requested_at <> '-infinity'
                UNION ALL
                SELECT k.outcome, true FROM probe_jobs AS k
                 WHERE k.id = n.job_id AND (n.job_requested_at IS NULL OR n.job_requested_at = '-infinity')
                 LIMIT 1
               ) AS j ON true
         -- as the row trigger: a run whose job is not found is counted
         WHERE NOT coalesce(n.result->>'fault' IS NOT DISTINCT FROM 'probectl'
                            OR n.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
                            OR j.outcome IS NOT DISTINCT FROM 'abandoned', false)
            OR j.found IS NULL
    ), days AS (
        INSERT INTO server_run_days AS d (server_id, day, ok, counted)
        SELECT f.server_id, (f.started_at AT TIME ZONE 'UTC')::date, count(*) FILTER (WHERE f.outcome = 'ok'), count(*)
          FROM f
         GROUP BY 1, 2
         ORDER BY 1, 2
        ON CONFLICT (server_id, day) DO UPDATE
           SET ok = d.ok + EXCLUDED.ok, counted = d.counted + EXCLUDED.counted
    ), latest AS (
        -- A server with one run in the statement (nearly always): its rollup in one upsert.
        INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
        SELECT f.server_id, f.id, f.started_at, f.outcome,
               CASE WHEN f.outcome = 'ok' THEN NULL ELSE f.started_at END, f.cert
          FROM f
         WHERE f.per_server = 1
         ORDER BY f.server_id
        ON CONFLICT (server_id) DO UPDATE
           SET last_run_id    = EXCLUDED.last_run_id,
               last_run_at    = EXCLUDED.last_run_at,
               last_outcome   = EXCLUDED.last_outcome,
               failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                     ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
               cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
         -- a run stored out of order (a replayed spool) counts in its day but does not replace a newer one
         WHERE r.last_run_at <= EXCLUDED.last_run_at
    )
    SELECT array_agg(DISTINCT f.server_id ORDER BY f.server_id),
           array_agg(f.id ORDER BY f.server_id, f.id) FILTER (WHERE f.per_server > 1)
      INTO v_servers, v_multi
      FROM f;

    -- A server with more runs in the statement: its rollup follows them one at a time, in order.
    FOR v_run IN
        SELECT n.id, n.server_id, n.started_at, coalesce(n.result->>'outcome', '') AS outcome,
               (jsonb_path_query_first(n.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz AS cert
          FROM new_runs AS n
         WHERE n.id = ANY (v_multi)
         ORDER BY n.server_id, n.id
    LOOP
        INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
        VALUES (v_run.server_id, v_run.id, v_run.started_at, v_run.outcome,
                CASE WHEN v_run.outcome = 'ok' THEN NULL ELSE v_run.started_at END, v_run.cert)
        ON CONFLICT (server_id) DO UPDATE
           SET last_run_id    = EXCLUDED.last_run_id,
               last_run_at    = EXCLUDED.last_run_at,
               last_outcome   = EXCLUDED.last_outcome,
               failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                     ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
               cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
         WHERE r.last_run_at <= EXCLUDED.last_run_at;
    END LOOP;

    IF v_servers IS NOT NULL THEN
        UPDATE server_rollups AS r
           SET uptime_30d = (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                               FROM server_run_days AS d
                              WHERE d.server_id = r.server_id
                                AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
         WHERE r.server_id = ANY (v_servers);
    END IF;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- 00020's probe_finish_many, as it was (no SET: CREATE OR REPLACE drops this one's).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_finish_many(
    p_job_ids           bigint[],
    p_server_ids        bigint[],
    p_requested_ats     timestamptz[],
    p_claimed           timestamptz[],
    p_outcomes          text[],
    p_errors            text[],
    p_started_ats       timestamptz[],
    p_check_finished_at timestamptz[],
    p_requests          integer[],
    p_results           jsonb[],
    p_envelopes         jsonb[],
    p_now               timestamptz DEFAULT NULL
) RETURNS TABLE (
    ord          integer,
    job_id       bigint,
    run_id       bigint,
    advanced     boolean,
    job_finished boolean,
    finished_at  timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_n   integer := coalesce(cardinality(p_job_ids), 0);
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;
    IF coalesce(cardinality(p_server_ids), -1) <> v_n OR coalesce(cardinality(p_requested_ats), -1) <> v_n
       OR coalesce(cardinality(p_claimed), -1) <> v_n OR coalesce(cardinality(p_outcomes), -1) <> v_n
       OR coalesce(cardinality(p_errors), -1) <> v_n OR coalesce(cardinality(p_started_ats), -1) <> v_n
       OR coalesce(cardinality(p_check_finished_at), -1) <> v_n OR coalesce(cardinality(p_requests), -1) <> v_n
       OR coalesce(cardinality(p_results), -1) <> v_n OR coalesce(cardinality(p_envelopes), -1) <> v_n THEN
        RAISE EXCEPTION 'probe_finish_many: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One answer per job: a job named twice would be judged twice against one snapshot.
    IF (SELECT count(DISTINCT u.id) FROM unnest(p_job_ids) AS u(id)) <> v_n THEN
        RAISE EXCEPTION 'probe_finish_many: a job is named twice' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Each job is found in its partition by its claim time; a finish without one is probe_finish's.
    IF EXISTS (SELECT 1 FROM unnest(p_requested_ats) AS u(t) WHERE u.t IS NULL) THEN
        RAISE EXCEPTION 'probe_finish_many: a job without its claim time' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The jobs' rows are locked, in id order (two batches never wait for each other in a cycle):
    -- a claim closing one as abandoned waits for this finish, or this finish sees it closed. The
    -- next statement reads them after the locks, as probe_finish does.
    PERFORM 1
       FROM unnest(p_job_ids, p_server_ids, p_requested_ats) AS i(job_id, server_id, requested_at)
       JOIN probe_jobs AS j ON j.id = i.job_id AND j.requested_at = i.requested_at AND j.server_id = i.server_id
      ORDER BY j.id
        FOR UPDATE OF j;

    RETURN QUERY
    WITH input AS (
        SELECT u.*
          FROM unnest(p_job_ids, p_server_ids, p_requested_ats, p_claimed, p_outcomes, p_errors, p_started_ats,
                      p_check_finished_at, p_requests, p_results, p_envelopes)
               WITH ORDINALITY AS u(job_id, server_id, requested_at, claimed, outcome, error, started_at,
                                    check_finished_at, requests, result, envelope, ord)
    ), job AS (
        -- Only the claim named (its id, server and time); a replay finds its run stored already
        -- (runs stored before 00017 are keyed -infinity, a previous binary's advance-first NULL).
        SELECT i.*, j.finished_at IS NULL AS open,
               (SELECT min(r.id) FROM probe_runs AS r -- two, stored before 00019's probe_runs_once
                 WHERE r.job_id = i.job_id
                   AND (r.job_requested_at = i.requested_at OR r.job_requested_at = '-infinity'
                        OR r.job_requested_at IS NULL)) AS stored_run
          FROM input AS i
          JOIN probe_jobs AS j ON j.id = i.job_id AND j.requested_at = i.requested_at AND j.server_id = i.server_id
    ), advanced AS (
        -- (a) Advance, only while the job is open, as a compare-and-set on the claimed value.
        UPDATE servers AS s
           SET next_check_at = v_now + s.check_interval
          FROM job AS k
         WHERE k.open AND k.stored_run IS NULL
           AND s.id = k.server_id
           AND s.next_check_at = k.claimed
           AND s.status = 'active'
        RETURNING s.id
    ), run AS (
        -- (b) The run, whatever the guards say; late when the job was closed meanwhile.
        INSERT INTO probe_runs AS r (job_id, job_requested_at, server_id, started_at, finished_at, requests, result,
                                     envelope, late)
        SELECT k.job_id, k.requested_at, k.server_id, k.started_at, k.check_finished_at, k.requests, k.result,
               k.envelope, NOT k.open
          FROM job AS k
         WHERE k.stored_run IS NULL
         ORDER BY k.job_id
        RETURNING r.id, r.job_id
    ), closed AS (
        -- (c) Finish the jobs still open.
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = k.outcome,
               error       = nullif(k.error, '')
          FROM job AS k
         WHERE k.open AND k.stored_run IS NULL
           AND j.id = k.job_id
           AND j.requested_at = k.requested_at
        RETURNING j.id
    )
    SELECT i.ord::integer, i.job_id, coalesce(k.stored_run, run.id),
           coalesce(k.open AND k.stored_run IS NULL AND EXISTS (SELECT 1 FROM advanced AS a WHERE a.id = k.server_id),
                    false),
           coalesce(k.open AND k.stored_run IS NULL AND EXISTS (SELECT 1 FROM closed AS c WHERE c.id = k.job_id),
                    false),
           v_now
      FROM input AS i
      LEFT JOIN job AS k ON k.ord = i.ord
      LEFT JOIN run ON run.job_id = k.job_id
     ORDER BY i.ord;
END
$probe$;
-- +goose StatementEnd
