-- name: AuditToolChanges
-- Per server (or the one named $3), each run in [$1, $2) whose complete tool list differs from
-- the server's previous comparable run (which may lie before $1). Comparable: the run listed
-- tools and fingerprinted all of them (not truncated, not behind auth). A server's first such run
-- is its baseline. In server, then time order.
WITH comparable AS (
    SELECT r.id, r.server_id, r.finished_at,
           r.result->>'tools_fingerprint'                           AS list_fp,
           coalesce(r.result->'tool_fingerprints', '[]'::jsonb)    AS tools,
           r.result->>'server_version'                              AS version
      FROM probe_runs r
     WHERE jsonb_typeof(r.result->'tools_fingerprint') = 'string'
       AND NOT coalesce((r.result->>'tools_truncated')::boolean, false)
       AND r.finished_at < $2::timestamptz
       AND ($3::text IS NULL OR r.server_id = (SELECT id FROM servers WHERE slug = $3))
), ordered AS (
    SELECT c.*,
           lag(c.id)      OVER w AS prev_id,
           lag(c.list_fp) OVER w AS prev_fp,
           lag(c.tools)   OVER w AS prev_tools,
           lag(c.version) OVER w AS prev_version
      FROM comparable c
    WINDOW w AS (PARTITION BY c.server_id ORDER BY c.finished_at, c.id)
)
SELECT s.slug AS server, o.prev_id AS from_run, o.id AS to_run, o.finished_at AS at,
       o.prev_tools::text AS tools_before, o.tools::text AS tools_after,
       o.prev_version AS version_before, o.version AS version_after
  FROM ordered o
  JOIN servers s ON s.id = o.server_id
 WHERE o.finished_at >= $1::timestamptz
   AND o.prev_id IS NOT NULL
   AND o.list_fp IS DISTINCT FROM o.prev_fp
 ORDER BY s.slug, o.finished_at, o.id;

-- name: AuditToolPopulation
-- What the tool audit compared: servers and runs with a complete tool list in [$1, $2).
SELECT count(DISTINCT r.server_id) AS servers, count(*) AS runs
  FROM probe_runs r
 WHERE jsonb_typeof(r.result->'tools_fingerprint') = 'string'
   AND NOT coalesce((r.result->>'tools_truncated')::boolean, false)
   AND r.finished_at >= $1::timestamptz AND r.finished_at < $2::timestamptz
   AND ($3::text IS NULL OR r.server_id = (SELECT id FROM servers WHERE slug = $3));

-- name: AuditToolDefinitions
-- The stored definitions of these fingerprints.
SELECT fingerprint, definition::text AS definition
  FROM tool_definitions
 WHERE fingerprint = ANY($1::text[]);
