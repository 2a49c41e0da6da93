-- The benchmark's data: servers (statement 1: $1 of them from $2), runs (statement 2: $1 per server,
-- spread over the 30 days from $2), every 20th run
-- failed, MCP servers listing tools, every run carrying a request with its certificate. Loaded
-- before migration 00007, so that the migration's backfill is what fills the rollup.
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at, created_at)
SELECT format('s-%s', lpad(i::text, 7, '0')), format('https://s-%s.example/mcp', i),
       CASE WHEN i % 2 = 0 THEN 'mcp' ELSE 'http' END, 'standard', interval '12 hours',
       $2::timestamptz + interval '31 days', $2::timestamptz
  FROM generate_series(1, $1::int) AS i;

INSERT INTO probe_jobs (server_id, reason, requested_at, finished_at, outcome, error)
SELECT s.id, 'scheduled', x.t, x.t + interval '1 second',
       CASE WHEN (s.id + k) % 20 = 0 THEN 'failed' ELSE 'ok' END,
       CASE WHEN (s.id + k) % 20 = 0 THEN 'HTTP 404 Not Found' END
  FROM servers AS s
 CROSS JOIN generate_series(0, $1::int - 1) AS k
 CROSS JOIN LATERAL (SELECT $2::timestamptz + make_interval(secs => k * (2592000.0 / $1::int) + (s.id % 600)) AS t) AS x;

-- A run's result is one of six documents (ok or failed; no tools, 5 or 6), built once and shared:
-- built per row, it made the load of 5,000,000 runs several times slower.
INSERT INTO probe_runs (job_id, server_id, started_at, finished_at, requests, result)
WITH t AS (
    SELECT o.outcome, n.tools,
           jsonb_strip_nulls(jsonb_build_object(
               'outcome', o.outcome,
               'summary', CASE WHEN o.outcome = 'ok' THEN 'HTTP 200' ELSE 'HTTP 404' END,
               'error', CASE WHEN o.outcome = 'failed' THEN 'HTTP 404 Not Found' END,
               'tools', nullif(n.tools, 0),
               'requests', jsonb_build_array(jsonb_build_object(
                   'method', 'POST', 'url', 'https://s.example/mcp', 'status', 200, 'latency_seconds', 0.1,
                   'bytes', 512, 'started_at', '2026-10-01T00:00:00Z',
                   'tls', jsonb_build_object('version', 'TLS 1.3', 'subject', 'CN=s.example', 'issuer', 'CN=Example CA',
                                             'cert_not_after', '2027-01-01T00:00:00Z'))),
               'started_at', '2026-10-01T00:00:00Z', 'finished_at', '2026-10-01T00:00:01Z')) AS result
      FROM (VALUES ('ok'), ('failed')) AS o (outcome)
     CROSS JOIN (VALUES (0), (5), (6)) AS n (tools)
)
SELECT j.id, j.server_id, j.requested_at, j.requested_at + make_interval(secs => 0.1 + (j.id % 50) / 100.0), 2, t.result
  FROM probe_jobs AS j
  JOIN t ON t.outcome = j.outcome
        AND t.tools = CASE WHEN j.server_id % 2 = 0 THEN 5 + (j.id % 3 = 0)::int ELSE 0 END;
