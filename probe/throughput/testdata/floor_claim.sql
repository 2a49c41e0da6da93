-- The floor's claim of up to $1 due servers, in one statement: locked in due order (SKIP LOCKED),
-- leased for the in-flight window, a job opened for each.
WITH picked AS (
    SELECT s.id FROM floor_servers AS s
     WHERE s.next_check_at <= now()
     ORDER BY s.next_check_at, s.id
     LIMIT $1
       FOR UPDATE SKIP LOCKED
), leased AS (
    UPDATE floor_servers AS s
       SET next_check_at = now() + interval '15 minutes'
      FROM picked AS p
     WHERE s.id = p.id
    RETURNING s.id, s.slug, s.endpoint_url, s.kind, s.next_check_at
), opened AS (
    INSERT INTO floor_jobs (server_id, requested_at)
    SELECT l.id, now() FROM leased AS l
    RETURNING id, server_id
)
SELECT o.id, l.id, l.slug, l.endpoint_url, l.kind, l.next_check_at
  FROM opened AS o
  JOIN leased AS l ON l.id = o.server_id;
