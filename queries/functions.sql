-- name: LiveFunctionBodies
-- The bodies (pg_proc.prosrc) of the named functions in the current schema, for the drift check.
SELECT p.proname, p.prosrc
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema()
   AND p.proname = ANY ($1::text[])
 ORDER BY p.proname, p.oid;
