-- Read-only queries for package audit. Every Audit* query runs inside a READ ONLY transaction (on
-- a primary or a hot standby, under a role with only SELECT on the tables): none may write, create
-- a temporary table or call a volatile function that writes. (The benchmark's loader and the tests'
-- window-function oracle live in audit/testdata: they do not ship.)

-- name: AuditNow
-- The transaction's start time: the default end of an audit's population and the clock open jobs
-- are aged against, so every figure agrees with the snapshot.
SELECT now() AS now;

-- name: AuditTxMode
-- Whether the caller's transaction is READ ONLY, and whether it reads one snapshot throughout
-- (REPEATABLE READ or SERIALIZABLE); audits refuse to run in one that is not both.
SELECT current_setting('transaction_read_only') = 'on' AS read_only,
       current_setting('transaction_isolation') IN ('repeatable read', 'serializable') AS one_snapshot;

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
-- The details of consecutive job pairs closer than @max_gap, for the few servers the scan found
-- (@server_ids): the second job requested in [@since, @until), the first anywhere from @from on.
-- Ties on requested_at go to the lower job id, so the pairs are the same on every run.
WITH ordered AS (
    SELECT j.id, j.server_id, j.requested_at, j.reason,
           lag(j.id)           OVER w AS first_id,
           lag(j.requested_at) OVER w AS first_requested_at,
           lag(j.finished_at)  OVER w AS first_finished_at
      FROM probe_jobs j
     WHERE j.server_id = ANY (@server_ids::bigint[])
       AND j.requested_at >= @from::timestamptz
       AND j.requested_at <  @until::timestamptz
    WINDOW w AS (PARTITION BY j.server_id ORDER BY j.requested_at, j.id)
)
SELECT o.server_id, s.slug, o.first_id AS first_job_id, o.id AS second_job_id,
       o.first_requested_at, o.first_finished_at, o.requested_at AS second_requested_at,
       o.reason AS second_reason,
       -- A failover's pair (migrations/00014): one of its jobs was restored from a spool or a
       -- journal (its claim vanished with an asynchronous failover), and probectl saw the
       -- database on a new timeline after the first job was requested: when it first saw it.
       CASE WHEN EXISTS (SELECT 1 FROM probe_restored_jobs AS rj WHERE rj.job_id IN (o.first_id, o.id))
            THEN (SELECT min(t.first_seen_at) FROM probectl_timelines AS t
                   WHERE t.first_seen_at > o.first_requested_at)
       END AS failover_at
  FROM ordered o
  JOIN servers s ON s.id = o.server_id
 WHERE o.first_id IS NOT NULL
   AND o.requested_at >= @since::timestamptz
   AND o.requested_at - o.first_requested_at < @max_gap::interval
 ORDER BY o.requested_at, o.server_id, o.id;

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
SELECT s.id AS server_id, s.slug, s.plan, s.check_interval,
       count(*) AS rounds,
       count(*) FILTER (WHERE o.reason IN ('maintainer_claim', 'manual')) AS rechecks,
       coalesce(sum(r.requests), 0)::bigint AS requests,
       coalesce(max(r.requests), 0)::int AS max_requests,
       count(*) FILTER (WHERE o.reason NOT IN ('maintainer_claim', 'manual')
                          AND o.requested_at - o.prev_requested_at < s.check_interval) AS short_gaps,
       min(o.requested_at - o.prev_requested_at) AS closest_gap
  FROM ordered o
  JOIN servers s ON s.id = o.server_id
  LEFT JOIN probe_runs r ON r.job_id = o.id
 WHERE o.requested_at >= $1::timestamptz
 GROUP BY s.id
 ORDER BY s.id;
