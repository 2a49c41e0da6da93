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
-- 00029's probectl.runs_once = 'checked' set outside probe_finish_many, the function it belongs
-- to: for a role that can log in, or for every role, in this database or every database
-- (pg_db_role_setting), or else in this session (PGOPTIONS, a SET). Set anywhere but in that
-- function it switches probe_runs_once off for every finish. A session's value is said only when
-- no stored setting that reaches this session's role explains it.
WITH stored AS (
    SELECT coalesce('role ' || quote_ident(r.rolname), 'every role') AS role,
           coalesce('database ' || quote_ident(d.datname), 'every database') AS database,
           s.setting,
           drs.setrole IN (0, (SELECT me.oid FROM pg_roles AS me WHERE me.rolname = current_user)) AS reaches_me
      FROM pg_db_role_setting AS drs
     CROSS JOIN LATERAL unnest(drs.setconfig) AS s(setting)
      LEFT JOIN pg_roles AS r ON r.oid = drs.setrole
      LEFT JOIN pg_database AS d ON d.oid = drs.setdatabase
     WHERE s.setting = 'probectl.runs_once=checked'
       AND (drs.setdatabase = 0 OR d.datname = current_database())
       AND (drs.setrole = 0 OR r.rolcanlogin)
)
SELECT st.role, st.database, st.setting FROM stored AS st
UNION ALL
SELECT 'this session', 'database ' || quote_ident(current_database()), 'probectl.runs_once=checked'
 WHERE current_setting('probectl.runs_once', true) = 'checked'
   AND NOT EXISTS (SELECT 1 FROM stored AS st WHERE st.reaches_me)
 ORDER BY 1, 2, 3;
