-- name: LiveFunctionBodies
-- The bodies (pg_proc.prosrc) of the named functions in the current schema, for the drift check;
-- overloads by their number of arguments.
SELECT p.proname, p.pronargs::int AS pronargs, p.prosrc
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema()
   AND p.proname = ANY ($1::text[])
 ORDER BY p.proname, p.pronargs, p.oid;
