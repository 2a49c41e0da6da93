-- +goose Up
-- A finish that costs a statement per batch, not statements per job (issue 25, levers 1 and 2).
--
-- probe_finish_many finishes a batch of jobs in two statements, whatever its size: the jobs are
-- locked in id order, then one statement advances the servers (the compare-and-set on the lease),
-- stores the runs and closes the jobs still open. Each job is judged exactly as probe_finish
-- judges it (migrations/00017_partitions.sql): a job closed meanwhile gets a late run and neither
-- advances nor closes; a job whose run is stored already (a replay) changes nothing and answers
-- with that run; a job that is not the claim it is said to be (an asynchronous failover gave its
-- id to another) stores nothing and answers with no run.
--
-- The rollups (00007) and the alerts' judgement (00016) run once per statement on the runs it
-- inserted (a transition table), not once per run: a batch's totals, days and tallies are each
-- upserted once per key, in key order, and a run that changes no server's state and emits no event
-- (an ok check of a server up whose tools and auth did not change, a failure held by its running
-- round, a failure counted below down_after: nearly every run) is judged in one UPDATE for the
-- batch. Every other run is judged one at a time, in server and run order, by
-- probe_runs_alert_run, the row trigger's body. The triggers keep their names. A statement inserting one run (the previous
-- binary's probe_finish, its advance-first finish) is a transition table of one row, and gets the
-- same rollups and the same events as before.
--
-- Additive for the previous binary: probe_finish and the row trigger functions stay as they are
-- (nothing calls the latter once the triggers are replaced; a Down puts them back).

-- +goose StatementBegin
CREATE FUNCTION probe_finish_many(
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

-- probe_runs_rollup_run is the rollup row trigger's body (00017) for one run: a statement of one
-- run (the previous binary's probe_finish, a finish alone) costs less through it than through the
-- statement's aggregates.
-- +goose StatementBegin
CREATE FUNCTION probe_runs_rollup_run(p_run probe_runs) RETURNS void
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_outcome text := coalesce(p_run.result->>'outcome', '');
    v_day     date := (p_run.started_at AT TIME ZONE 'UTC')::date;
    v_fault   boolean;
    v_cert    timestamptz;
    v_secs    double precision := greatest(extract(epoch FROM p_run.finished_at - p_run.started_at), 0);
BEGIN
    INSERT INTO run_totals AS t (kind, outcome, shard, runs, seconds_sum, buckets)
    SELECT s.kind, v_outcome, (p_run.server_id % 16)::smallint, 1, v_secs,
           ARRAY(SELECT (v_secs <= b)::int::bigint FROM unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i) ORDER BY i)
      FROM servers AS s
     WHERE s.id = p_run.server_id
    ON CONFLICT (kind, outcome, shard) DO UPDATE
       SET runs        = t.runs + 1,
           seconds_sum = t.seconds_sum + EXCLUDED.seconds_sum,
           buckets     = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i);

    -- A late run is inserted after its job was closed as abandoned; a run on time, before its job
    -- is finished. So the job's outcome here is 'abandoned' exactly for late runs.
    -- The job in its partition when the run carries its key (00017); a run without it (legacy,
    -- or a previous binary's advance-first finish) looks in every partition.
    IF p_run.job_requested_at IS NOT NULL AND p_run.job_requested_at <> '-infinity' THEN
        SELECT p_run.result->>'fault' IS NOT DISTINCT FROM 'probectl'
               OR p_run.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
               OR j.outcome IS NOT DISTINCT FROM 'abandoned'
          INTO v_fault
          FROM probe_jobs AS j
         WHERE j.id = p_run.job_id AND j.requested_at = p_run.job_requested_at;
    ELSE
        SELECT p_run.result->>'fault' IS NOT DISTINCT FROM 'probectl'
               OR p_run.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
               OR j.outcome IS NOT DISTINCT FROM 'abandoned'
          INTO v_fault
          FROM probe_jobs AS j
         WHERE j.id = p_run.job_id;
    END IF;
    IF v_fault THEN
        RETURN;
    END IF;

    INSERT INTO server_run_days AS d (server_id, day, ok, counted)
    VALUES (p_run.server_id, v_day, (v_outcome = 'ok')::int, 1)
    ON CONFLICT (server_id, day) DO UPDATE
       SET ok = d.ok + EXCLUDED.ok, counted = d.counted + 1;

    v_cert := (jsonb_path_query_first(p_run.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz;
    INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
    VALUES (p_run.server_id, p_run.id, p_run.started_at, v_outcome,
            CASE WHEN v_outcome = 'ok' THEN NULL ELSE p_run.started_at END, v_cert)
    ON CONFLICT (server_id) DO UPDATE
       SET last_run_id    = EXCLUDED.last_run_id,
           last_run_at    = EXCLUDED.last_run_at,
           last_outcome   = EXCLUDED.last_outcome,
           failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                 ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
           cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
     -- a run stored out of order (a replayed spool) counts in its day but does not replace a newer one
     WHERE r.last_run_at <= EXCLUDED.last_run_at;

    UPDATE server_rollups AS r
       SET uptime_30d = (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                           FROM server_run_days AS d
                          WHERE d.server_id = p_run.server_id
                            AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
     WHERE r.server_id = p_run.server_id;
    RETURN;
END
$probe$;
-- +goose StatementEnd

-- The rollups of the runs a statement inserted (00007's probe_runs_rollup, per statement).
-- +goose StatementBegin
CREATE FUNCTION probe_runs_rollup_batch() RETURNS trigger
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

-- probe_runs_alert_run judges one run, as the row trigger probe_runs_alert (00016) did; p_tally
-- false: the run's round tally was bumped already (the statement's tallies, in key order).
-- +goose StatementBegin
CREATE FUNCTION probe_runs_alert_run(p_run probe_runs, p_tally boolean) RETURNS void
LANGUAGE plpgsql
AS $probe$
DECLARE
    r          record;
    v_fail     boolean;
    v_degraded boolean := false;
    v_state    text;
    v_ok       integer;
    v_failed   integer;
    v_streak   bigint[];
    v_hround   bigint;
    v_hrun     bigint;
    v_open     uuid;
    v_changed  timestamptz;
    v_tools    text;
    v_version  text;
    v_auth     text;
    v_id       uuid;
BEGIN
    SELECT coalesce(x.outcome, '') AS outcome, x.summary, x.fault, x.error,
           nullif(x.tools_fingerprint, '') AS tools_fingerprint, coalesce(x.server_version, '') AS server_version,
           coalesce(nullif(x.auth, ''), 'none') AS auth,
           j.round_id, j.outcome AS job_outcome, s.kind,
           coalesce(p.down_after, 2) AS down_after, coalesce(p.up_after, 1) AS up_after,
           coalesce(p.storm_share, 50) AS storm_share, coalesce(p.storm_min, 10) AS storm_min,
           pr.finished_at AS round_finished_at, a.held_round_id, a.held_run_id,
           a.state, a.consecutive_ok, a.consecutive_failed, a.streak_runs, a.last_run_at,
           a.tools_fingerprint AS last_tools, a.server_version AS last_version, a.auth AS last_auth,
           a.open_event_id, a.changed_at
      INTO r
      FROM (SELECT p_run.result->>'outcome' AS outcome, p_run.result->>'summary' AS summary, p_run.result->>'fault' AS fault,
                   p_run.result->>'error' AS error, p_run.result->>'tools_fingerprint' AS tools_fingerprint,
                   p_run.result->>'server_version' AS server_version, p_run.result->>'auth' AS auth) AS x
      JOIN probe_jobs AS j ON j.id = p_run.job_id
      JOIN servers AS s ON s.id = j.server_id
      JOIN alert_states AS a ON a.server_id = p_run.server_id
      LEFT JOIN probe_rounds AS pr ON pr.id = j.round_id
      LEFT JOIN alert_policy AS p ON true
       FOR UPDATE OF a;
    IF NOT FOUND                                          -- no state row: no alerts
       OR r.outcome NOT IN ('ok', 'failed', 'error')       -- not a check's result: nothing to judge
       OR r.fault IS NOT DISTINCT FROM 'probectl'          -- fenced
       OR r.summary IS NOT DISTINCT FROM 'interrupted'     -- stopped by probectl
       OR r.job_outcome IS NOT DISTINCT FROM 'abandoned'   -- late: its job was closed before it came
       OR r.last_run_at > p_run.started_at THEN              -- older than the last run judged
        RETURN;
    END IF;
    -- The storm guard. Every run bumps its round's tally; the round is judged once it is over.
    IF p_tally AND r.round_id IS NOT NULL THEN
        INSERT INTO alert_round_tallies AS t (round_id, kind, outcome, shard, runs)
        VALUES (r.round_id, r.kind, r.outcome, (p_run.server_id % 16)::smallint, 1)
        ON CONFLICT (round_id, kind, outcome, shard) DO UPDATE SET runs = t.runs + 1;
    END IF;

    -- A failure held from another round (one that died, or ended while this failure's finish was
    -- committing) is settled first: that round is over for this server.
    IF r.held_round_id IS NOT NULL AND r.held_round_id IS DISTINCT FROM r.round_id THEN
        PERFORM alert_settle_held(p_run.server_id, r.storm_share, r.storm_min, r.down_after);
        SELECT a.state, a.consecutive_ok, a.consecutive_failed, a.streak_runs, a.open_event_id, a.changed_at
          INTO r.state, r.consecutive_ok, r.consecutive_failed, r.streak_runs, r.open_event_id, r.changed_at
          FROM alert_states AS a WHERE a.server_id = p_run.server_id;
        r.held_round_id := NULL;
    END IF;

    v_fail := r.outcome <> 'ok';
    v_state := r.state;
    v_ok := r.consecutive_ok;
    v_failed := r.consecutive_failed;
    v_streak := r.streak_runs;
    v_open := r.open_event_id;
    v_changed := r.changed_at;
    v_hround := r.held_round_id;
    v_hrun := r.held_run_id;

    IF v_fail AND r.round_id IS NOT NULL AND r.round_finished_at IS NULL THEN
        -- A failure of a round still running is held: it counts toward nothing until the round
        -- is judged on all its checks (alert_rounds_end).
        v_hround := r.round_id;
        v_hrun := p_run.id;
    ELSIF v_fail THEN
        -- A failure with no round, or of a round already over and judged: a failure of a
        -- degraded round counts toward nothing, the counts stay as they were.
        IF r.round_id IS NOT NULL THEN
            v_degraded := EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = r.round_id);
        END IF;
        IF NOT v_degraded THEN
            IF v_failed = 0 THEN
                v_streak := '{}';
            END IF;
            v_failed := v_failed + 1;
            v_ok := 0;
            v_streak := (v_streak || p_run.id)[greatest(1, cardinality(v_streak) - 8):];
            IF v_failed >= r.down_after AND v_state <> 'down' THEN
                v_state := 'down';
            END IF;
        END IF;
    ELSE
        -- An ok check; a failure held from its own round before it is superseded by it.
        v_hround := NULL;
        v_hrun := NULL;
        IF v_ok = 0 THEN
            v_streak := '{}';
        END IF;
        v_ok := v_ok + 1;
        v_failed := 0;
        v_streak := (v_streak || p_run.id)[greatest(1, cardinality(v_streak) - 8):];
        IF v_ok >= r.up_after AND v_state <> 'up' THEN
            v_state := 'up';
        END IF;
    END IF;

    IF v_state <> r.state THEN
        v_changed := now();
        IF v_state = 'down' THEN
            v_open := alert_emit('server.down', p_run.server_id, 'down', r.state, v_streak, r.round_id,
                jsonb_build_object('failed_checks', v_failed, 'error', r.error, 'outcome', r.outcome), p_run.finished_at);
        ELSIF r.state = 'down' THEN
            v_id := alert_emit('server.recovered', p_run.server_id, 'up', r.state, v_streak, r.round_id,
                jsonb_build_object('ok_checks', v_ok, 'down_event_id', v_open), p_run.finished_at);
            UPDATE alert_events SET resolved_at = p_run.finished_at, resolved_by = v_id WHERE id = v_open;
            v_open := NULL;
        END IF;
    END IF;

    -- What the server says it is, from its answers (ok runs only).
    v_tools := r.last_tools;
    v_version := r.last_version;
    v_auth := r.last_auth;
    IF NOT v_fail THEN
        IF r.tools_fingerprint IS NOT NULL THEN
            IF r.last_tools IS NOT NULL AND r.last_tools <> r.tools_fingerprint THEN
                PERFORM alert_emit('server.tools_changed', p_run.server_id, v_state, v_state, ARRAY[p_run.id], r.round_id,
                    jsonb_build_object('previous_fingerprint', r.last_tools, 'fingerprint', r.tools_fingerprint,
                                       'previous_version', r.last_version, 'version', r.server_version,
                                       'changed_without_version_bump', coalesce(r.last_version, '') = r.server_version),
                p_run.finished_at);
            END IF;
            v_tools := r.tools_fingerprint;
            v_version := r.server_version;
        END IF;
        IF r.last_auth IS NOT NULL AND r.last_auth <> r.auth THEN
            PERFORM alert_emit('server.auth_changed', p_run.server_id, v_state, v_state, ARRAY[p_run.id], r.round_id,
                jsonb_build_object('previous_auth', r.last_auth, 'auth', r.auth), p_run.finished_at);
        END IF;
        v_auth := r.auth;
    END IF;

    UPDATE alert_states AS a
       SET state = v_state, consecutive_ok = v_ok, consecutive_failed = v_failed, streak_runs = v_streak,
           held_round_id = v_hround, held_run_id = v_hrun, last_run_id = p_run.id, last_run_at = p_run.started_at,
           tools_fingerprint = v_tools, server_version = v_version, auth = v_auth, open_event_id = v_open,
           changed_at = v_changed
     WHERE a.server_id = p_run.server_id;
    RETURN;
END
$probe$;
-- +goose StatementEnd

-- The alerts' judgement of the runs a statement inserted. A run that cannot change its server's
-- state, and so emits no event, is judged in one UPDATE for the statement with the others of its
-- kind (nearly every run):
--   - an ok check of a server whose tools and auth are as they were, holding no failure from
--     another round, and not down or not yet recovering (up_after not reached);
--   - a failure held by its round still running (it counts toward nothing until the round ends),
--     holding no failure from another round;
--   - a failure counted (no round, or its round is over and was not degraded) that does not take
--     the server down (below down_after, or down already), holding no failure from another round.
-- Every other run (a transition, a tools or auth change, a failure held from another round to
-- settle first, a failure of a degraded round) is judged by probe_runs_alert_run, as is every run
-- of a server with more than one in the statement.
-- +goose StatementBegin
CREATE FUNCTION probe_runs_alert_batch() RETURNS trigger
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

-- Every judged run rewrites its server's state row: room on its page keeps the new version there
-- (a HOT update, no index entry; the table's only index is its key, never updated).
ALTER TABLE alert_states SET (fillfactor = 50);

DROP TRIGGER probe_runs_rollup ON probe_runs;
CREATE TRIGGER probe_runs_rollup AFTER INSERT ON probe_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION probe_runs_rollup_batch();
DROP TRIGGER probe_runs_alert ON probe_runs;
CREATE TRIGGER probe_runs_alert AFTER INSERT ON probe_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION probe_runs_alert_batch();

-- +goose Down
ALTER TABLE alert_states RESET (fillfactor);
DROP TRIGGER probe_runs_alert ON probe_runs;
CREATE TRIGGER probe_runs_alert AFTER INSERT ON probe_runs
    FOR EACH ROW EXECUTE FUNCTION probe_runs_alert();
DROP TRIGGER probe_runs_rollup ON probe_runs;
CREATE TRIGGER probe_runs_rollup AFTER INSERT ON probe_runs
    FOR EACH ROW EXECUTE FUNCTION probe_runs_rollup();
DROP FUNCTION probe_runs_alert_batch();
DROP FUNCTION probe_runs_alert_run(probe_runs, boolean);
DROP FUNCTION probe_runs_rollup_batch();
DROP FUNCTION probe_runs_rollup_run(probe_runs);
DROP FUNCTION probe_finish_many(bigint[], bigint[], timestamptz[], timestamptz[], text[], text[], timestamptz[],
                                timestamptz[], integer[], jsonb[], jsonb[], timestamptz);
