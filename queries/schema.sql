-- name: SchemaVersionTableExists
SELECT to_regclass('goose_db_version') IS NOT NULL;

-- name: SchemaVersion
SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied;
