-- A servers row with every field chosen; created_at defaults to now().
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, status, maintainer_claimed_at,
                     next_check_at, created_at)
VALUES ($1, $2, $3, $4, $5::interval, $6, $7, $8, coalesce($9::timestamptz, now()))
RETURNING id;
