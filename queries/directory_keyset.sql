-- name: DirectorySlugAsc
-- A page of the directory by keyset (a cursor: a deep page costs what the first does): up to $2
-- servers after the slug $1 (NULL: from the start), in slug order; the OFFSET ($3) is 0 but for a
-- page number typed without a cursor. The other orders below
-- take the sort key of the cursor's row too and break ties by slug, so that every order is total
-- and its descending form is exactly the ascending one reversed.
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE s.slug > coalesce($1::text, '')
 ORDER BY s.slug
 LIMIT $2 OFFSET $3;

-- name: DirectorySlugDesc
-- (the bound is an index condition either way; the <> drops the cursor's own row)
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE s.slug <= coalesce($1::text, (SELECT max(x.slug) FROM servers AS x))
   AND ($1::text IS NULL OR s.slug <> $1::text)
 ORDER BY s.slug DESC
 LIMIT $2 OFFSET $3;

-- name: DirectoryOutcomeAsc
-- By the last run's outcome ('' never run, first), then slug; after ($2 outcome, $1 slug).
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE $1::text IS NULL OR (coalesce(r.last_outcome, ''), s.slug) > ($2::text, $1::text)
 ORDER BY coalesce(r.last_outcome, ''), s.slug
 LIMIT $3 OFFSET $4;

-- name: DirectoryOutcomeDesc
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE $1::text IS NULL OR (coalesce(r.last_outcome, ''), s.slug) < ($2::text, $1::text)
 ORDER BY coalesce(r.last_outcome, '') DESC, s.slug DESC
 LIMIT $3 OFFSET $4;

-- name: DirectoryUptimeAsc
-- By 30-day uptime (none first, as -1: uptime is 0..1), then slug; after ($2 uptime, $1 slug).
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE $1::text IS NULL OR (coalesce(r.uptime_30d, -1), s.slug) > ($2::float8, $1::text)
 ORDER BY coalesce(r.uptime_30d, -1), s.slug
 LIMIT $3 OFFSET $4;

-- name: DirectoryUptimeDesc
SELECT s.slug, s.kind, s.status, coalesce(r.last_outcome, '') AS last_outcome, r.failing_since, r.last_run_at,
       r.uptime_30d, r.cert_not_after
  FROM servers AS s
  LEFT JOIN server_rollups AS r ON r.server_id = s.id
 WHERE $1::text IS NULL OR (coalesce(r.uptime_30d, -1), s.slug) < ($2::float8, $1::text)
 ORDER BY coalesce(r.uptime_30d, -1) DESC, s.slug DESC
 LIMIT $3 OFFSET $4;
