-- name: UpsertServer
-- A new server is due at once; an existing one keeps its next check time (a plan change takes
-- effect when it is next advanced).
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at, created_at, transport)
VALUES (@slug, @endpoint_url, @kind, @plan, @check_interval::interval,
        coalesce(@now::timestamptz, now()), coalesce(@now::timestamptz, now()), @transport::text)
ON CONFLICT (slug) DO UPDATE
   SET endpoint_url   = EXCLUDED.endpoint_url,
       kind           = EXCLUDED.kind,
       plan           = EXCLUDED.plan,
       check_interval = EXCLUDED.check_interval,
       transport      = EXCLUDED.transport
RETURNING id, (xmax = 0) AS inserted;

-- name: ListServers
-- The directory by slug: every server with status $1 (NULL: any), or the one with slug $2.
SELECT id, slug, endpoint_url, kind, plan, check_interval, status, maintainer_claimed_at,
       next_check_at, created_at, transport
  FROM servers
 WHERE ($1::text IS NULL OR status = $1)
   AND ($2::text IS NULL OR slug = $2)
 ORDER BY slug;

-- name: RecheckServer
-- A maintainer claimed the server: it is due now, and the claim records the next job's reason as
-- maintainer_claim (the spacing guard lets such an explicit re-check through).
UPDATE servers
   SET maintainer_claimed_at = coalesce($2::timestamptz, now()),
       next_check_at         = coalesce($2::timestamptz, now())
 WHERE slug = $1
RETURNING id, slug, endpoint_url, kind, plan, check_interval, status, maintainer_claimed_at,
          next_check_at, created_at, transport;

