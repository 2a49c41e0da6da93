-- name: DirectoryCounts
-- Active servers by the outcome of their last run ('' for a server never run), from the rollup
-- (server_rollups: migrations/00007_history.sql).
SELECT coalesce(r.last_outcome, '') AS outcome, count(*) AS servers
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE s.status = 'active'
 GROUP BY 1
 ORDER BY 1;

-- name: DirectoryFailing
-- Active servers whose last run was not ok, failing longest first: at most $1, and how many.
SELECT s.slug, s.kind, r.last_outcome, r.failing_since, r.last_run_at, r.uptime_30d, r.cert_not_after,
       count(*) OVER () AS total
  FROM server_rollups AS r
  JOIN servers AS s ON s.id = r.server_id
 WHERE r.failing_since IS NOT NULL AND s.status = 'active'
 ORDER BY r.failing_since, s.slug
 LIMIT $1;

-- name: DirectoryExpiring
-- Active servers whose certificate expires before $2: at most $1, soonest first, and how many.
SELECT s.slug, s.kind, r.last_outcome, r.failing_since, r.last_run_at, r.uptime_30d, r.cert_not_after,
       count(*) OVER () AS total
  FROM server_rollups AS r
  JOIN servers AS s ON s.id = r.server_id
 WHERE r.cert_not_after IS NOT NULL AND r.cert_not_after < $2 AND s.status = 'active'
 ORDER BY r.cert_not_after, s.slug
 LIMIT $1;

-- name: DirectoryTotal
SELECT count(*) FROM servers;

-- name: ServerRollup
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE s.slug = $1;

-- name: ServerSeries
-- A server's runs over the 30 days before @at, oldest first, for its charts: each run's outcome,
-- duration and tool count (NULL: none listed). Runs at probectl's fault are left out. The runs are
-- read within their partition keys @key_from..@key_to (run_facts_keyed: migrations/00019).
SELECT f.started_at, f.outcome, f.finished_at - f.started_at AS duration,
       (f.result->>'tools')::int AS tools
  FROM run_facts_keyed AS f
 WHERE f.server_id = @server_id
   AND f.started_at >  @at::timestamptz - interval '30 days'
   AND f.started_at <= @at::timestamptz
   AND (f.job_requested_at >= @key_from::timestamptz AND f.job_requested_at <= @key_to::timestamptz
        OR f.job_requested_at IS NULL OR f.job_requested_at = '-infinity')
   AND NOT f.probectl_fault
 ORDER BY f.started_at, f.id;

-- name: RunTotals
-- Runs by kind and outcome over every shard, with the histogram bounds and cumulative counts.
SELECT t.kind, t.outcome, sum(t.runs)::bigint AS runs, sum(t.seconds_sum) AS seconds_sum,
       run_totals_bounds() AS bounds,
       ARRAY(SELECT sum(x.n)::bigint
               FROM run_totals AS t2
              CROSS JOIN LATERAL unnest(t2.buckets) WITH ORDINALITY AS x(n, i)
              WHERE t2.kind = t.kind AND t2.outcome = t.outcome
              GROUP BY x.i ORDER BY x.i) AS buckets
  FROM run_totals AS t
 GROUP BY t.kind, t.outcome
 ORDER BY t.kind, t.outcome;
