-- name: StoreTools
-- A run's tool list and definitions, stored once per fingerprint: a list or a definition seen
-- before is left as it is (its first_seen_at stands). Content-addressed, so storing twice (a
-- retry, a replay) stores nothing new. The server's bytes of the day (UTC, tool_definition_bytes)
-- stay within @day_budget: a list new to the table is counted first and stored only if it fits
-- (else counted as cut: nothing reads a list back, the run keeps its fingerprints), then the
-- definitions new to the table in the order given; the rest are not stored and counted as cut
-- (their fingerprints stay in the run). The bytes counted are those of the JSON given. The
-- server's rows older than yesterday are removed.
WITH clock AS (
    SELECT coalesce(@now::timestamptz, now()) AS at,
           (coalesce(@now::timestamptz, now()) AT TIME ZONE 'UTC')::date AS day
), used AS (
    SELECT coalesce((SELECT b.bytes FROM tool_definition_bytes b, clock
                      WHERE b.server_id = @server_id AND b.day = clock.day), 0) AS bytes
), list AS (
    SELECT NOT EXISTS (SELECT 1 FROM tool_lists l WHERE l.fingerprint = @list_fingerprint) AS new,
           octet_length(@list::text) AS bytes
), list_room AS (
    SELECT list.new AND list.bytes + used.bytes <= @day_budget AS store,
           list.new AND list.bytes + used.bytes > @day_budget AS cut
      FROM list, used
), fresh AS (
    SELECT d.fingerprint, d.definition,
           sum(octet_length(d.definition)) OVER (ORDER BY d.ord) + used.bytes
             + CASE WHEN list_room.store THEN list.bytes ELSE 0 END <= @day_budget AS within
      FROM unnest(@fingerprints::text[], @definitions::text[]) WITH ORDINALITY AS d (fingerprint, definition, ord),
           used, list, list_room
     WHERE NOT EXISTS (SELECT 1 FROM tool_definitions t WHERE t.fingerprint = d.fingerprint)
), lists AS (
    INSERT INTO tool_lists (fingerprint, tools, first_seen_at)
    SELECT @list_fingerprint, @list::jsonb, clock.at FROM clock, list_room
     WHERE list_room.store
    ON CONFLICT (fingerprint) DO NOTHING
    RETURNING 1
), defs AS (
    INSERT INTO tool_definitions (fingerprint, definition, first_seen_at)
    SELECT f.fingerprint, f.definition::jsonb, clock.at
      FROM fresh f, clock
     WHERE f.within
    ON CONFLICT (fingerprint) DO NOTHING
    RETURNING fingerprint
), spent AS (
    INSERT INTO tool_definition_bytes (server_id, day, bytes)
    SELECT @server_id, clock.day,
           coalesce((SELECT sum(octet_length(f.definition)) FROM defs JOIN fresh f USING (fingerprint)), 0)
             + CASE WHEN EXISTS (SELECT 1 FROM lists) THEN list.bytes ELSE 0 END
      FROM clock, list
     WHERE EXISTS (SELECT 1 FROM defs) OR EXISTS (SELECT 1 FROM lists)
    ON CONFLICT (server_id, day) DO UPDATE SET bytes = tool_definition_bytes.bytes + excluded.bytes
    RETURNING 1
), old AS (
    DELETE FROM tool_definition_bytes b
     USING clock
     WHERE b.server_id = @server_id AND b.day < clock.day - 1
    RETURNING 1
)
SELECT (SELECT count(*) FROM lists) AS lists_added, (SELECT count(*) FROM defs) AS definitions_added,
       (SELECT count(*) FROM fresh WHERE NOT within) AS definitions_cut,
       (SELECT count(*) FROM list_room WHERE cut) AS lists_cut;
