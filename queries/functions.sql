-- name: LiveFunctionBodies
-- The bodies (pg_proc.prosrc) of the named functions in the current schema, for the drift check;
-- overloads by their number of arguments.
SELECT p.proname, p.pronargs::int AS pronargs, p.prosrc
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema()
   AND p.proname = ANY ($1::text[])
 ORDER BY p.proname, p.pronargs, p.oid;

-- name: GuardSettingsSet
-- probectl's own settings (probectl.*) set outside the functions that own them: for a role or a
-- database this session's database sees (pg_db_role_setting), or else in this session (PGOPTIONS,
-- a SET: a session's value that came from a role or a database is not said twice). 00029's
-- probectl.runs_once belongs to probe_finish_many alone: set anywhere else it switches
-- probe_runs_once off for every finish.
WITH stored AS (
    SELECT coalesce('role ' || quote_ident(r.rolname), 'every role') AS role,
           coalesce('database ' || quote_ident(d.datname), 'every database') AS database,
           s.setting
      FROM pg_db_role_setting AS drs
     CROSS JOIN LATERAL unnest(drs.setconfig) AS s(setting)
      LEFT JOIN pg_roles AS r ON r.oid = drs.setrole
      LEFT JOIN pg_database AS d ON d.oid = drs.setdatabase
     WHERE s.setting LIKE 'probectl.%'
       AND (drs.setdatabase = 0 OR d.datname = current_database())
)
SELECT st.role, st.database, st.setting FROM stored AS st
UNION ALL
SELECT 'this session', 'database ' || quote_ident(current_database()),
       'probectl.runs_once=' || current_setting('probectl.runs_once', true)
 WHERE coalesce(current_setting('probectl.runs_once', true), '') <> ''
   AND NOT EXISTS (SELECT 1 FROM stored)
 ORDER BY 1, 2, 3;
