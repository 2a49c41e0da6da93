-- name: CompleteSlugs
-- The slugs that start with $1 (what a shell has typed so far), in order, at most $2 of them.
SELECT slug, status FROM servers WHERE starts_with(slug, $1::text) ORDER BY slug LIMIT $2;

-- name: CompleteKeyIDs
-- The signing keys whose id starts with $1, in order, at most $2 of them.
SELECT key_id, retired_at FROM signing_keys WHERE starts_with(key_id, $1::text) ORDER BY key_id LIMIT $2;

-- name: CompleteReceivers
-- The alert receivers (not removed) whose name starts with $1, in order, at most $2 of them.
SELECT name, format FROM alert_receivers
 WHERE removed_at IS NULL AND starts_with(name, $1::text)
 ORDER BY name
 LIMIT $2;
