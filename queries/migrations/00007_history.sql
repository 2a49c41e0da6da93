-- +goose Up
-- What the history views need (runs list, servers show, the /servers pages): who changed a
-- server's status and why, and indexes on the runs as those views read them. Additive only: the
-- previous binary never reads server_status_changes, and its claim already skips every server
-- whose status is not 'active'.

CREATE TABLE server_status_changes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id   bigint      NOT NULL REFERENCES servers (id),
    status_from text        NOT NULL,
    status_to   text        NOT NULL CHECK (status_to IN ('active', 'paused', 'delisted')),
    reason      text        NOT NULL CHECK (reason <> ''),
    changed_by  text        NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

-- servers show reads a server's latest change.
CREATE INDEX server_status_changes_server_idx ON server_status_changes (server_id, changed_at);

-- runs list with no --server reads the newest runs first.
CREATE INDEX probe_runs_started_idx ON probe_runs (started_at, id);

-- A run as every history view reads it: its own outcome (from the result: a late run's job says
-- abandoned, the run says what the server did), the first signature's key id (NULL: unsigned),
-- and whether the run is at probectl's own fault (interrupted by probectl, fenced or stored late
-- after its job was closed as abandoned): such runs say nothing about the server and are left out
-- of its uptime.
CREATE VIEW run_facts AS
SELECT r.id, r.job_id, j.round_id, r.server_id, s.slug AS server, s.kind,
       coalesce(r.result->>'outcome', j.outcome, '') AS outcome,
       coalesce(r.result->>'summary', '') AS summary,
       nullif(r.result->>'error', '') AS error,
       r.requests, r.started_at, r.finished_at,
       r.envelope->'signatures'->0->>'keyid' AS key_id,
       (r.result->>'fault' IS NOT DISTINCT FROM 'probectl'
        OR r.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
        OR j.outcome IS NOT DISTINCT FROM 'abandoned') AS probectl_fault
  FROM probe_runs AS r
  JOIN probe_jobs AS j ON j.id = r.job_id
  JOIN servers AS s ON s.id = r.server_id;

-- The directory view (/servers) reads one row per server, never its runs: a rollup kept current
-- by a trigger on probe_runs, so every finish (this binary's, the previous one's, a replayed
-- spool) maintains it and no writer has to know. Runs at probectl's fault are left out, as from
-- uptime. server_run_days holds the counts by UTC day the 30-day uptime is summed from.
CREATE TABLE server_run_days (
    server_id bigint  NOT NULL REFERENCES servers (id),
    day       date    NOT NULL,
    ok        integer NOT NULL,
    counted   integer NOT NULL,
    PRIMARY KEY (server_id, day)
);

CREATE TABLE server_rollups (
    server_id      bigint      PRIMARY KEY REFERENCES servers (id),
    last_run_id    bigint      NOT NULL,
    last_run_at    timestamptz NOT NULL,
    last_outcome   text        NOT NULL,
    -- when the current streak of runs that are not ok began; NULL while the last run is ok
    failing_since  timestamptz,
    -- runs ok over runs counted, over the 30 UTC days up to the last run
    uptime_30d     double precision,
    -- the certificate expiry the newest run that saw one saw
    cert_not_after timestamptz
);

CREATE INDEX server_rollups_outcome_idx ON server_rollups (last_outcome, server_id);
CREATE INDEX server_rollups_uptime_idx ON server_rollups (uptime_30d, server_id);
CREATE INDEX server_rollups_cert_idx ON server_rollups (cert_not_after) WHERE cert_not_after IS NOT NULL;
CREATE INDEX server_rollups_failing_idx ON server_rollups (failing_since) WHERE failing_since IS NOT NULL;

-- /metrics: runs by kind and outcome and a histogram of their durations, every run counted
-- (those at probectl's fault too: the metrics are about the prober as well). No label per server;
-- 16 shards per kind and outcome (server id mod 16) so concurrent finishes seldom wait on one row.
-- buckets[i] counts the runs that took at most run_totals_bounds()[i] seconds (cumulative, as
-- Prometheus' le buckets are).
CREATE TABLE run_totals (
    kind        text             NOT NULL,
    outcome     text             NOT NULL,
    shard       smallint         NOT NULL,
    runs        bigint           NOT NULL,
    seconds_sum double precision NOT NULL,
    buckets     bigint[]         NOT NULL,
    PRIMARY KEY (kind, outcome, shard)
);

-- +goose StatementBegin
CREATE FUNCTION run_totals_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE
AS $probe$ SELECT ARRAY[0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]::double precision[] $probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION probe_runs_rollup() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_outcome text := coalesce(NEW.result->>'outcome', '');
    v_day     date := (NEW.started_at AT TIME ZONE 'UTC')::date;
    v_fault   boolean;
    v_cert    timestamptz;
    v_secs    double precision := greatest(extract(epoch FROM NEW.finished_at - NEW.started_at), 0);
BEGIN
    INSERT INTO run_totals AS t (kind, outcome, shard, runs, seconds_sum, buckets)
    SELECT s.kind, v_outcome, (NEW.server_id % 16)::smallint, 1, v_secs,
           ARRAY(SELECT (v_secs <= b)::int::bigint FROM unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i) ORDER BY i)
      FROM servers AS s
     WHERE s.id = NEW.server_id
    ON CONFLICT (kind, outcome, shard) DO UPDATE
       SET runs        = t.runs + 1,
           seconds_sum = t.seconds_sum + EXCLUDED.seconds_sum,
           buckets     = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i);

    -- A late run is inserted after its job was closed as abandoned; a run on time, before its job
    -- is finished. So the job's outcome here is 'abandoned' exactly for late runs.
    SELECT NEW.result->>'fault' IS NOT DISTINCT FROM 'probectl'
           OR NEW.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
           OR j.outcome IS NOT DISTINCT FROM 'abandoned'
      INTO v_fault
      FROM probe_jobs AS j
     WHERE j.id = NEW.job_id;
    IF v_fault THEN
        RETURN NULL;
    END IF;

    INSERT INTO server_run_days AS d (server_id, day, ok, counted)
    VALUES (NEW.server_id, v_day, (v_outcome = 'ok')::int, 1)
    ON CONFLICT (server_id, day) DO UPDATE
       SET ok = d.ok + EXCLUDED.ok, counted = d.counted + 1;

    v_cert := (jsonb_path_query_first(NEW.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz;
    INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
    VALUES (NEW.server_id, NEW.id, NEW.started_at, v_outcome,
            CASE WHEN v_outcome = 'ok' THEN NULL ELSE NEW.started_at END, v_cert)
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
                          WHERE d.server_id = NEW.server_id
                            AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
     WHERE r.server_id = NEW.server_id;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

CREATE TRIGGER probe_runs_rollup AFTER INSERT ON probe_runs
    FOR EACH ROW EXECUTE FUNCTION probe_runs_rollup();

-- The runs stored before this migration, in the order they were made.
INSERT INTO server_run_days (server_id, day, ok, counted)
SELECT f.server_id, (f.started_at AT TIME ZONE 'UTC')::date, count(*) FILTER (WHERE f.outcome = 'ok'), count(*)
  FROM run_facts AS f
 WHERE NOT f.probectl_fault
 GROUP BY 1, 2;

INSERT INTO server_rollups (server_id, last_run_id, last_run_at, last_outcome, failing_since, uptime_30d, cert_not_after)
SELECT l.server_id, l.id, l.started_at, l.outcome,
       CASE WHEN l.outcome = 'ok' THEN NULL ELSE
            coalesce((SELECT min(f.started_at) FROM run_facts AS f
                       WHERE f.server_id = l.server_id AND NOT f.probectl_fault
                         AND f.started_at > coalesce((SELECT max(o.started_at) FROM run_facts AS o
                                                       WHERE o.server_id = l.server_id AND NOT o.probectl_fault
                                                         AND o.outcome = 'ok'), '-infinity')), l.started_at) END,
       (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0) FROM server_run_days AS d
         WHERE d.server_id = l.server_id AND d.day > (l.started_at AT TIME ZONE 'UTC')::date - 30),
       (SELECT (jsonb_path_query_first(r.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz
          FROM probe_runs AS r
         WHERE r.server_id = l.server_id AND jsonb_path_exists(r.result, '$.requests[*].tls.cert_not_after')
         ORDER BY r.started_at DESC LIMIT 1)
  FROM (SELECT DISTINCT ON (f.server_id) f.server_id, f.id, f.started_at, f.outcome
          FROM run_facts AS f
         WHERE NOT f.probectl_fault
         ORDER BY f.server_id, f.started_at DESC, f.id DESC) AS l;

-- The runs stored before this migration: every run, in its kind, outcome and shard.
INSERT INTO run_totals (kind, outcome, shard, runs, seconds_sum, buckets)
WITH g AS (
    SELECT s.kind, coalesce(r.result->>'outcome', '') AS outcome, (r.server_id % 16)::smallint AS shard,
           greatest(extract(epoch FROM r.finished_at - r.started_at), 0) AS secs
      FROM probe_runs AS r
      JOIN servers AS s ON s.id = r.server_id
), c AS (
    SELECT g.kind, g.outcome, g.shard, u.i, count(*) FILTER (WHERE g.secs <= u.b) AS n
      FROM g CROSS JOIN unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i)
     GROUP BY 1, 2, 3, 4
)
SELECT t.kind, t.outcome, t.shard, t.runs, t.seconds_sum, b.buckets
  FROM (SELECT g.kind, g.outcome, g.shard, count(*) AS runs, sum(g.secs) AS seconds_sum FROM g GROUP BY 1, 2, 3) AS t
  JOIN (SELECT c.kind, c.outcome, c.shard, array_agg(c.n ORDER BY c.i) AS buckets FROM c GROUP BY 1, 2, 3) AS b
 USING (kind, outcome, shard);

-- +goose Down
DROP TRIGGER probe_runs_rollup ON probe_runs;
DROP FUNCTION probe_runs_rollup();
DROP FUNCTION run_totals_bounds();
DROP TABLE run_totals;
DROP TABLE server_rollups;
DROP TABLE server_run_days;
DROP VIEW run_facts;
DROP INDEX probe_runs_started_idx;
DROP TABLE server_status_changes;
