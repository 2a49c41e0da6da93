-- name: StoreTools
-- A run's tool list and definitions, stored once per fingerprint: a list or a definition seen
-- before is left as it is (its first_seen_at stands). Content-addressed, so storing twice (a
-- retry, a replay) stores nothing new. $1 list fingerprint, $2 its [{name, fingerprint}],
-- $3 and $4 the definitions' fingerprints and canonical JSON, in the same order.
WITH lists AS (
    INSERT INTO tool_lists (fingerprint, tools, first_seen_at)
    VALUES ($1, $2::jsonb, coalesce($5::timestamptz, now()))
    ON CONFLICT (fingerprint) DO NOTHING
    RETURNING 1
), defs AS (
    INSERT INTO tool_definitions (fingerprint, definition, first_seen_at)
    SELECT d.fingerprint, d.definition, coalesce($5::timestamptz, now())
      FROM unnest($3::text[], $4::jsonb[]) AS d (fingerprint, definition)
    ON CONFLICT (fingerprint) DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM lists) AS lists_added, (SELECT count(*) FROM defs) AS definitions_added;
