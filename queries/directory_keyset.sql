-- name: DirectorySlugAsc
-- A page of the directory by keyset (a cursor: a deep page costs what the first does): up to
-- @limit servers after @slug (NULL: from the start), in slug order; @offset is 0 but for a page
-- number typed without a cursor. The other orders below
-- take the sort key of the cursor's row too and break ties by slug, so that every order is total
-- and its descending form is exactly the ascending one reversed.
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE s.slug > coalesce(@slug::text, '')
 ORDER BY s.slug
 LIMIT @limit OFFSET @offset;

-- name: DirectorySlugDesc
-- (the bound is an index condition either way; the <> drops the cursor's own row)
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE s.slug <= coalesce(@slug::text, (SELECT max(x.slug) FROM servers AS x))
   AND (@slug::text IS NULL OR s.slug <> @slug::text)
 ORDER BY s.slug DESC
 LIMIT @limit OFFSET @offset;

-- name: DirectoryOutcomeAsc
-- By the last run's outcome ('' never run, first), then slug; after (@outcome, @slug).
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE @slug::text IS NULL OR (coalesce(r.last_outcome, ''), s.slug) > (@outcome::text, @slug::text)
 ORDER BY coalesce(r.last_outcome, ''), s.slug
 LIMIT @limit OFFSET @offset;

-- name: DirectoryOutcomeDesc
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE @slug::text IS NULL OR (coalesce(r.last_outcome, ''), s.slug) < (@outcome::text, @slug::text)
 ORDER BY coalesce(r.last_outcome, '') DESC, s.slug DESC
 LIMIT @limit OFFSET @offset;

-- name: DirectoryUptimeAsc
-- By 30-day uptime (none first, as -1: uptime is 0..1), then slug; after (@uptime, @slug).
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE @slug::text IS NULL OR (coalesce(r.uptime_30d, -1), s.slug) > (@uptime::float8, @slug::text)
 ORDER BY coalesce(r.uptime_30d, -1), s.slug
 LIMIT @limit OFFSET @offset;

-- name: DirectoryUptimeDesc
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE @slug::text IS NULL OR (coalesce(r.uptime_30d, -1), s.slug) < (@uptime::float8, @slug::text)
 ORDER BY coalesce(r.uptime_30d, -1) DESC, s.slug DESC
 LIMIT @limit OFFSET @offset;
