-- name: ServerFigures
-- A server's uptime and latency as of @at, from its runs of the 30 days before (run_facts:
-- migrations/00007_history.sql). Uptime over a window: runs ok over runs not at probectl's own
-- fault (NULL when there is none). Latency: the duration of its ok checks over 30 days. Days whose
-- runs a prune dropped (before the oldest kept partition, docs/retention.md) are counted from the
-- rollup by day (server_run_days), which a prune leaves whole; their latency is gone with them.
-- The runs are read within their partition keys @key_from..@key_to (run_facts_keyed: migrations/00019), so
-- that only the partitions of those days are read.
WITH w AS (
    SELECT f.outcome, f.probectl_fault, f.started_at,
           f.finished_at - f.started_at AS took
      FROM run_facts_keyed AS f
     WHERE f.server_id = @server_id
       AND f.started_at >  @at::timestamptz - interval '30 days'
       AND f.started_at <= @at::timestamptz
       AND (f.job_requested_at >= @key_from::timestamptz AND f.job_requested_at <= @key_to::timestamptz
            OR f.job_requested_at IS NULL OR f.job_requested_at = '-infinity')
), kept AS (
    -- where the kept runs begin: the end of the newest range pruned (queries.OldestKept)
    SELECT max(p.range_to) AS kept_from FROM probe_partitions AS p
     WHERE p.parent = 'probe_runs' AND p.dropped_at IS NOT NULL
), pruned AS (
    SELECT coalesce(sum(d.ok) FILTER (WHERE d.day > (@at::timestamptz AT TIME ZONE 'UTC')::date - 7), 0) AS ok_7d,
           coalesce(sum(d.counted) FILTER (WHERE d.day > (@at::timestamptz AT TIME ZONE 'UTC')::date - 7), 0) AS counted_7d,
           coalesce(sum(d.ok), 0) AS ok_30d,
           coalesce(sum(d.counted), 0) AS counted_30d
      FROM server_run_days AS d, kept AS k
     WHERE d.server_id = @server_id
       AND d.day < (k.kept_from AT TIME ZONE 'UTC')::date
       AND d.day > (@at::timestamptz AT TIME ZONE 'UTC')::date - 30
)
SELECT count(*) FILTER (WHERE w.outcome = 'ok' AND w.started_at > @at::timestamptz - interval '24 hours') AS ok_24h,
       count(*) FILTER (WHERE NOT w.probectl_fault AND w.started_at > @at::timestamptz - interval '24 hours') AS counted_24h,
       (count(*) FILTER (WHERE w.outcome = 'ok' AND w.started_at > @at::timestamptz - interval '7 days') + min(pr.ok_7d))::bigint AS ok_7d,
       (count(*) FILTER (WHERE NOT w.probectl_fault AND w.started_at > @at::timestamptz - interval '7 days') + min(pr.counted_7d))::bigint AS counted_7d,
       (count(*) FILTER (WHERE w.outcome = 'ok') + min(pr.ok_30d))::bigint AS ok_30d,
       (count(*) FILTER (WHERE NOT w.probectl_fault) + min(pr.counted_30d))::bigint AS counted_30d,
       percentile_cont(0.5)  WITHIN GROUP (ORDER BY w.took) FILTER (WHERE w.outcome = 'ok') AS p50,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY w.took) FILTER (WHERE w.outcome = 'ok') AS p95
  FROM pruned AS pr LEFT JOIN w ON true;

-- name: ServerCert
-- The certificate the server's newest run within 30 days before @at saw (no row: none seen); the
-- runs read within their partition keys @key_from..@key_to, as ServerFigures.
SELECT r.started_at AS seen_at,
       (jsonb_path_query_first(r.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz AS cert_not_after
  FROM probe_runs AS r
 WHERE r.server_id = @server_id
   AND r.started_at >  @at::timestamptz - interval '30 days'
   AND r.started_at <= @at::timestamptz
   AND (r.job_requested_at >= @key_from::timestamptz AND r.job_requested_at <= @key_to::timestamptz
        OR r.job_requested_at IS NULL OR r.job_requested_at = '-infinity')
   AND jsonb_path_exists(r.result, '$.requests[*].tls.cert_not_after')
 ORDER BY r.started_at DESC
 LIMIT 1;

-- name: ServerTools
-- The tool count of the server's newest run that listed tools, and since when it has been that
-- count: the first run after the last one that listed another count (no row: never listed).
WITH t AS (
    SELECT r.started_at, (r.result->>'tools')::int AS n
      FROM probe_runs AS r
     WHERE r.server_id = $1 AND r.result ? 'tools'
     ORDER BY r.started_at DESC
     LIMIT 1
), other AS (
    SELECT max(r.started_at) AS at
      FROM probe_runs AS r, t
     WHERE r.server_id = $1 AND r.result ? 'tools' AND (r.result->>'tools')::int <> t.n
)
SELECT t.n AS count,
       (SELECT min(r.started_at) FROM probe_runs AS r, other
         WHERE r.server_id = $1 AND r.result ? 'tools'
           AND r.started_at > coalesce(other.at, '-infinity')) AS changed_at
  FROM t;

-- name: ServerAuth
-- What the server's newest run says of auth ("required" when its MCP check met a bearer challenge
-- and saw no tools); no row when it has no run, a null auth when the run did not say.
SELECT r.result->>'auth' AS auth
  FROM probe_runs AS r
 WHERE r.server_id = $1
 ORDER BY r.started_at DESC
 LIMIT 1;

-- name: ServerLastStatusChange
SELECT c.status_from, c.status_to, c.reason, c.changed_by, c.changed_at
  FROM server_status_changes AS c
 WHERE c.server_id = $1
 ORDER BY c.changed_at DESC, c.id DESC
 LIMIT 1;

-- name: ChangeServerStatus
-- Sets a server's status and records who changed it and why, in one statement; a server made
-- active again is due at once (@now). No row: no server has slug @slug. changed: the status was
-- not already @status (nothing is written then), unless a registry sync had set it: the status is
-- now the caller's, so the sync's mark (registry_delisted_at, which lets a sync list the server
-- again) is cleared and the change recorded even when the status was already @status (an
-- operator's delisting of a server a sync had delisted stands, with their reason); a sync that
-- delists sets the mark again after this.
WITH old AS (
    SELECT s.id, s.status, s.registry_delisted_at FROM servers AS s WHERE s.slug = @slug FOR UPDATE
), upd AS (
    UPDATE servers AS s
       SET status = @status,
           registry_delisted_at = NULL,
           next_check_at = CASE WHEN @status = 'active' AND old.status <> @status THEN coalesce(@now::timestamptz, now())
                                ELSE s.next_check_at END
      FROM old
     WHERE s.id = old.id AND (old.status <> @status OR old.registry_delisted_at IS NOT NULL)
    RETURNING s.id
), log AS (
    INSERT INTO server_status_changes (server_id, status_from, status_to, reason, changed_by, changed_at)
    SELECT old.id, old.status, @status, @reason, @changed_by, coalesce(@now::timestamptz, now())
      FROM old JOIN upd ON upd.id = old.id
    RETURNING id
)
SELECT old.status AS status_from, EXISTS (SELECT 1 FROM log) AS changed FROM old;

-- name: ServerEndpoints
SELECT s.id, s.endpoint_url FROM servers AS s WHERE s.id = ANY ($1::bigint[]);

-- name: ServerRuns
-- One server's runs newest first, as ListRuns (run_facts) gives them, from @since on when given,
-- read only from the partitions of the jobs requested from @key_from on (and the legacy and
-- default partitions, whose runs carry no usable key): '-infinity' reads them all.
-- history.ListRuns widens @key_from until the answer cannot change
-- (migrations/00019_partition_reads.sql). The newest runs are picked first, by started_at alone
-- (with its ties), so that each partition is read along its (server_id, started_at) index; each
-- picked run's job is then read in its partition, as run_facts reads it.
SELECT r.id, r.job_id, j.round_id, r.server_id, s.slug AS server, s.kind,
       coalesce(r.result->>'outcome', j.outcome, '') AS outcome,
       coalesce(r.result->>'summary', '') AS summary,
       nullif(r.result->>'error', '') AS error,
       r.requests, r.started_at, r.finished_at,
       r.envelope->'signatures'->0->>'keyid' AS key_id,
       (r.result->>'fault' IS NOT DISTINCT FROM 'probectl'
        OR r.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
        OR j.outcome IS NOT DISTINCT FROM 'abandoned') AS probectl_fault
  FROM (SELECT n.* FROM probe_runs AS n
         WHERE n.server_id = @server_id
           AND (n.job_requested_at >= @key_from::timestamptz OR n.job_requested_at IS NULL OR n.job_requested_at = '-infinity')
           AND (@since::timestamptz IS NULL OR n.started_at >= @since)
         ORDER BY n.started_at DESC
         FETCH FIRST (@limit::integer) ROWS WITH TIES) AS r
  JOIN LATERAL (
        SELECT k.round_id, k.outcome FROM probe_jobs AS k
         WHERE k.id = r.job_id AND k.requested_at = r.job_requested_at
        UNION ALL
        SELECT k.round_id, k.outcome FROM probe_jobs AS k
         WHERE k.id = r.job_id AND (r.job_requested_at IS NULL OR r.job_requested_at = '-infinity')
       ) AS j ON true
  JOIN servers AS s ON s.id = r.server_id
 ORDER BY r.started_at DESC, r.id DESC
 LIMIT @limit::integer;

-- name: OneServerPlanSettings
-- For the rest of the transaction (set_config(..., true) is SET LOCAL), no parallel workers: a
-- read of one server's runs reads a few rows from each of 30 daily partitions, and the planner,
-- adding up the partitions' sizes, would start workers for it, which costs more than the read
-- (measured: 36 ms before the first row on a busy 2-core machine, against 1 ms for the scans).
SELECT set_config('max_parallel_workers_per_gather', '0', true);
