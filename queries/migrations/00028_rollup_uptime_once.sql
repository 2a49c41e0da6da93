-- +goose Up
-- A finish writes each server's rollup once, not twice (issue 25: rollups per statement).
--
-- The rollups' statement trigger (probe_runs_rollup_batch, 00023) upserted each server's rollup
-- (its last run) and then, in a statement of its own, updated the same row again for its 30-day
-- uptime, read from the days the first statement had just counted: every finished check left
-- two new versions of its server's rollup (HOT while its indexed columns stay as they were; each
-- index written otherwise), two dead ones for the autovacuum of a table every check writes.
--
-- Now the days are counted first and the rollup of a server with one run in the statement
-- (nearly always) is upserted after them, its uptime with it: a later statement sees the days as
-- the first left them, and the upsert's window ends at the run's day, which is its last run when
-- it writes it. The rollups are locked in a statement before the upsert, so that the days it reads
-- include those of every other finish that wrote the same rollup first, as the UPDATE read them
-- after the upsert's locks (queries/rollup_uptime_test.go holds two finishes of one server to
-- it). The UPDATE stays for the servers the upsert does not write so: those with more runs in the
-- statement (their rollup follows them one at a time), those whose run came out of order (a
-- replayed spool: it counts in its day, and the window ends at the newer run), and those from
-- the first without a rollup on (nothing to lock; one sorted pass of locks). Same rollups and
-- uptimes as before, as the row trigger leaves them (queries/finish_triggers_test.go, an
-- out-of-order run and a day past the window included); the previous binary fires the same
-- trigger and reads the same rows.
--
-- Measured alone in one session (10,000 servers claimed in claims of 17 and finished in batches of
-- 270 by probe_finish_many, each server's second round or later), this migration down and up
-- alternately, four times each: the rollups' trigger (pg_stat_user_functions) took 349-389 ms
-- before (374 on average) and 275-382 ms after (317), about 6 us a server less; the finishes wrote
-- 3,070-3,263 bytes of WAL a server before (pg_stat_wal) and 2,991-3,066 after; server_rollups
-- took 20,000 row updates a round before and 10,000 after (pg_stat_user_tables). A version
-- without the locks measured 9-16 us less: a row lock is a WAL record and a statement of its own.

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
    -- the servers with one counted run in the statement, and that run, in server order
    o_server  bigint[];
    o_run     bigint[];
    o_at      timestamptz[];
    o_outcome text[];
    o_cert    timestamptz[];
    o_locked  boolean[]; -- its rollup was locked before the upsert
    v_locked  bigint[];
    v_cut     bigint;    -- the first of them without a rollup
    -- the servers whose rollup the upsert of those runs wrote
    v_done    bigint[];
    v_rest    bigint[];
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
    )
    SELECT array_agg(DISTINCT f.server_id ORDER BY f.server_id),
           array_agg(f.id ORDER BY f.server_id, f.id) FILTER (WHERE f.per_server > 1),
           array_agg(f.server_id ORDER BY f.server_id) FILTER (WHERE f.per_server = 1),
           array_agg(f.id ORDER BY f.server_id) FILTER (WHERE f.per_server = 1),
           array_agg(f.started_at ORDER BY f.server_id) FILTER (WHERE f.per_server = 1),
           array_agg(f.outcome ORDER BY f.server_id) FILTER (WHERE f.per_server = 1),
           array_agg(f.cert ORDER BY f.server_id) FILTER (WHERE f.per_server = 1)
      INTO v_servers, v_multi, o_server, o_run, o_at, o_outcome, o_cert
      FROM f;

    -- A server with one run in the statement (nearly always): its rollup in one upsert, its uptime
    -- with it, read from its days as the statement above left them (a later statement sees that
    -- one's writes). The uptime is the one UPDATE below would have set: the window ends at the
    -- run's day, which is the rollup's last run when the upsert writes it.
    IF o_server IS NOT NULL THEN
        -- First their rollups are locked, in server order (the upsert's), in a statement of their
        -- own, so that the upsert reads the days as of after every other finish that wrote one of
        -- these rollups has committed (it holds the rollup until it commits, and writes its days
        -- before): as the UPDATE below reads them, after the locks the upsert took. Only the
        -- servers before the first that has no rollup yet: the upsert inserts that one, and so
        -- locks it, after every server this statement locked, and must not lock a later one
        -- before it (two finishes would then take the same rows in two orders). From that server
        -- on, as for a server whose first rollup another finish may be inserting meanwhile (the
        -- upsert would wait for it, then write what its own snapshot saw), the uptime is left to
        -- the UPDATE below, which comes after the upsert's locks.
        SELECT coalesce(min(o.server_id), 9223372036854775807) INTO v_cut
          FROM unnest(o_server) AS o(server_id)
         WHERE NOT EXISTS (SELECT 1 FROM server_rollups AS r WHERE r.server_id = o.server_id);
        SELECT array_agg(k.server_id IS NOT NULL ORDER BY o.i), array_agg(k.server_id) FILTER (WHERE k.server_id IS NOT NULL)
          INTO o_locked, v_locked
          FROM unnest(o_server) WITH ORDINALITY AS o(server_id, i)
          LEFT JOIN LATERAL (SELECT r.server_id FROM server_rollups AS r
                              WHERE r.server_id = o.server_id AND o.server_id < v_cut
                                FOR UPDATE) AS k ON true;
        WITH latest AS (
            INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since,
                                             cert_not_after, uptime_30d)
            SELECT o.server_id, o.id, o.started_at, o.outcome,
                   CASE WHEN o.outcome = 'ok' THEN NULL ELSE o.started_at END, o.cert,
                   CASE WHEN o.locked THEN
                       (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                          FROM server_run_days AS d
                         WHERE d.server_id = o.server_id
                           AND d.day > (o.started_at AT TIME ZONE 'UTC')::date - 30) END
              FROM unnest(o_server, o_run, o_at, o_outcome, o_cert, o_locked)
                   AS o(server_id, id, started_at, outcome, cert, locked)
             ORDER BY o.server_id
            ON CONFLICT (server_id) DO UPDATE
               SET last_run_id    = EXCLUDED.last_run_id,
                   last_run_at    = EXCLUDED.last_run_at,
                   last_outcome   = EXCLUDED.last_outcome,
                   failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                         ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
                   cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after),
                   uptime_30d     = EXCLUDED.uptime_30d
             -- a run stored out of order (a replayed spool) counts in its day but does not replace a newer one
             WHERE r.last_run_at <= EXCLUDED.last_run_at
            RETURNING r.server_id
        )
        SELECT array_agg(l.server_id) INTO v_done FROM latest AS l;
    END IF;

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

    -- The uptime of every other server with a counted run: those with more runs in the statement,
    -- those whose one run came out of order (its day counts; the window ends at the newer run), and
    -- those whose rollup was not locked before the upsert (see above).
    v_rest := ARRAY(SELECT unnest(v_servers) EXCEPT (SELECT unnest(v_done) INTERSECT SELECT unnest(v_locked)));
    IF cardinality(v_rest) > 0 THEN
        UPDATE server_rollups AS r
           SET uptime_30d = (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                               FROM server_run_days AS d
                              WHERE d.server_id = r.server_id
                                AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
         WHERE r.server_id = ANY (v_rest);
    END IF;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- +goose Down
-- 00023's probe_runs_rollup_batch, as it was.
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
