-- Read-only queries for package audit. Every Audit* query runs inside a READ ONLY transaction (on
-- a primary or a hot standby, under a role with only SELECT on the tables): none may write, create
-- a temporary table or call a volatile function that writes. The AuditBench* blocks at the end are
-- the exception: they build the benchmark's data set in a scratch database and are never called
-- by an audit.

-- name: AuditNow
-- The transaction's start time: the default end of an audit's population and the clock open jobs
-- are aged against, so every figure agrees with the snapshot.
SELECT now();

-- name: AuditTxMode
-- Whether the caller's transaction is READ ONLY, and whether it reads one snapshot throughout
-- (REPEATABLE READ or SERIALIZABLE); audits refuse to run in one that is not both.
SELECT current_setting('transaction_read_only') = 'on',
       current_setting('transaction_isolation') IN ('repeatable read', 'serializable');

-- name: AuditPlanSettings
-- The audits' planner settings, for the rest of the transaction only (set_config(..., true) is
-- SET LOCAL; allowed in a READ ONLY transaction and on a standby). plan_cache_mode: pgx caches a
-- connection's statements, and after five runs of one PostgreSQL may switch to a generic plan,
-- planned without the bounds: it expects a few rows, so it reads the population through
-- probe_jobs_requested_idx and sorts all of it (measured: 2.9 s instead of 1.0 s on 5 M jobs,
-- and a sort as big as the population). A custom plan knows the bounds and walks
-- probe_jobs_server_requested_idx in order, sorting nothing. jit: the scan is a plain index walk;
-- compiling it would cost more than it saves.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
       set_config('jit', 'off', true);

-- name: AuditDuplicateScan
-- The one streaming pass of the duplicate audit: every job requested in [$1, $2) in
-- (server_id, requested_at) order, so that the previous job of a server is the previous row. Both
-- columns are in probe_jobs_server_requested_idx: an index-only scan, nothing sorted, nothing held.
-- $1 is --since minus the window, so the job before --since still shows as the previous one.
SELECT server_id, requested_at
  FROM probe_jobs
 WHERE requested_at >= $1::timestamptz
   AND requested_at <  $2::timestamptz
 ORDER BY server_id, requested_at;

-- name: AuditDuplicatePairs
-- The details of consecutive job pairs closer than $5, for the few servers the scan found: the
-- second job requested in [$3, $4), the first anywhere from $2 on. Ties on requested_at go to the
-- lower job id, so the pairs are the same on every run.
WITH ordered AS (
    SELECT j.id, j.server_id, j.requested_at, j.reason,
           lag(j.id)           OVER w AS first_id,
           lag(j.requested_at) OVER w AS first_requested_at,
           lag(j.finished_at)  OVER w AS first_finished_at
      FROM probe_jobs j
     WHERE j.server_id = ANY ($1::bigint[])
       AND j.requested_at >= $2::timestamptz
       AND j.requested_at <  $4::timestamptz
    WINDOW w AS (PARTITION BY j.server_id ORDER BY j.requested_at, j.id)
)
SELECT o.server_id, s.slug, o.first_id, o.id, o.first_requested_at, o.first_finished_at,
       o.requested_at, o.reason
  FROM ordered o
  JOIN servers s ON s.id = o.server_id
 WHERE o.first_id IS NOT NULL
   AND o.requested_at >= $3::timestamptz
   AND o.requested_at - o.first_requested_at < $5::interval
 ORDER BY o.requested_at, o.server_id, o.id;

-- name: AuditDuplicateCountWindow
-- The duplicate definition written as a window function, computed entirely in SQL: the jobs in
-- [$1, $2) and how many of them were requested less than $3 after the previous job of their
-- server. Tests use it as an independent oracle for the streaming scan; the benchmark times it.
SELECT count(*),
       count(*) FILTER (WHERE requested_at - prev_requested_at < $3::interval)
  FROM (SELECT requested_at,
               lag(requested_at) OVER (PARTITION BY server_id ORDER BY requested_at) AS prev_requested_at
          FROM probe_jobs
         WHERE requested_at >= $1::timestamptz - $3::interval
           AND requested_at <  $2::timestamptz) j
 WHERE requested_at >= $1::timestamptz;

-- name: AuditRate
-- Per server with a job requested in [$1, $2): its rounds (jobs), the explicit re-checks among
-- them, the requests its runs made, the most one run made, and the scheduled rounds requested less
-- than its check interval after the previous round (which may lie before $1). One row per server,
-- in server order; the caller keeps only the servers over the promise.
WITH ordered AS (
    SELECT j.id, j.server_id, j.requested_at, j.reason,
           lag(j.requested_at) OVER (PARTITION BY j.server_id ORDER BY j.requested_at, j.id) AS prev_requested_at
      FROM probe_jobs j
     WHERE j.requested_at >= $1::timestamptz - (SELECT coalesce(max(check_interval), interval '0') FROM servers)
       AND j.requested_at <  $2::timestamptz
)
SELECT s.id, s.slug, s.plan, extract(epoch FROM s.check_interval)::float8,
       count(*),
       count(*) FILTER (WHERE o.reason IN ('maintainer_claim', 'manual')),
       coalesce(sum(r.requests), 0)::bigint,
       coalesce(max(r.requests), 0)::int,
       count(*) FILTER (WHERE o.reason NOT IN ('maintainer_claim', 'manual')
                          AND o.requested_at - o.prev_requested_at < s.check_interval),
       extract(epoch FROM min(o.requested_at - o.prev_requested_at))::float8
  FROM ordered o
  JOIN servers s ON s.id = o.server_id
  LEFT JOIN probe_runs r ON r.job_id = o.id
 WHERE o.requested_at >= $1::timestamptz
 GROUP BY s.id
 ORDER BY s.id;

-- name: AuditOpenJobs
-- Every job not finished, oldest first, with its server and round (the partial unique index on
-- open jobs keeps this small).
SELECT j.id, j.server_id, s.slug, j.round_id, r.trigger, r.version, j.invocation, j.reason,
       j.requested_at
  FROM probe_jobs j
  JOIN servers s ON s.id = j.server_id
  LEFT JOIN probe_rounds r ON r.id = j.round_id
 WHERE j.finished_at IS NULL
 ORDER BY j.requested_at, j.id;

-- name: AuditBenchDeferred
-- The secondary indexes and foreign keys of probe_jobs, each as the statement that drops it and
-- the statement that builds it again: a bulk load is several times faster without them, and
-- building them afterwards is one sort each. Read from the catalog, so it follows the migrations.
SELECT format('DROP INDEX %I', indexname), indexdef
  FROM pg_indexes
 WHERE schemaname = current_schema() AND tablename = 'probe_jobs' AND indexname <> 'probe_jobs_pkey'
UNION ALL
SELECT format('ALTER TABLE probe_jobs DROP CONSTRAINT %I', conname),
       format('ALTER TABLE probe_jobs ADD CONSTRAINT %I %s', conname, pg_get_constraintdef(oid))
  FROM pg_constraint
 WHERE conrelid = 'probe_jobs'::regclass AND contype = 'f';

-- name: AuditBenchInsertServers
-- $1 servers on the standard plan, named bench-1, bench-2, ...
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
SELECT 'bench-' || n, 'https://bench-' || n || '.example/', 'http', 'standard', interval '12 hours', $2::timestamptz
  FROM generate_series(1, $1::int) n;

-- name: AuditBenchInsertJobs
-- $1 jobs per server spread evenly over [$2, $2 + $3), each server at its own offset, finished two
-- seconds after the request; every $4-th server also gets the incident's duplicate, requested
-- 0.168 s after its first job finished. Inserted in request order, as a live table fills.
INSERT INTO probe_jobs (server_id, reason, requested_at, finished_at, outcome)
SELECT server_id, 'scheduled', at, at + interval '2 seconds', 'ok'
  FROM (SELECT s.id AS server_id,
               $2::timestamptz + ($3::interval / $1::int) * (k + (hashint8(s.id) & 1048575)::float8 / 1048576) AS at
          FROM servers s, generate_series(0, $1::int - 1) k
        UNION ALL
        SELECT s.id,
               $2::timestamptz + ($3::interval / $1::int) * ((hashint8(s.id) & 1048575)::float8 / 1048576)
                 + interval '2.168 seconds'
          FROM servers s
         WHERE s.id % $4::int = 0) j
 ORDER BY at;

-- name: AuditBenchVacuumJobs
-- Sets the visibility map (as autovacuum would have on a month of jobs) and the statistics.
VACUUM (ANALYZE) probe_jobs;

-- name: AuditBenchVacuumServers
VACUUM (ANALYZE) servers;
