-- name: RiverMigrationTimes
-- When each of River's migrations was applied, as River records it. River's table had no line
-- column before its migration 005; to_jsonb reads the column when it exists, so one statement
-- serves both shapes, and only the main line (probectl's) is read.
SELECT m.version::bigint AS version, m.created_at
  FROM river_migration m
 WHERE coalesce(to_jsonb(m) ->> 'line', 'main') = 'main';
