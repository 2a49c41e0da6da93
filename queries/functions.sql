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
-- The settings that switch a guard off around functions as shipped, set for every role or for a
-- role that can log in and write what the setting switches off, in this database or every
-- database (pg_db_role_setting), or else in this session (PGOPTIONS, a SET):
--   - 00029's probectl.runs_once = 'checked' outside probe_finish_many, the function it belongs
--     to: probe_runs_once off for every finish, for a role that can insert runs;
--   - session_replication_role = 'replica': no trigger fires (nor a foreign key's check), for a
--     role that can write a table a guard's trigger is on. A replication or loader tool's role
--     that writes none of them may keep it.
-- A session's value is said only when no stored setting of that name that reaches this
-- session's role (whatever that role may write) explains it.
WITH guard (setting) AS (
    VALUES ('probectl.runs_once=checked'), ('session_replication_role=replica')
), found AS (
    SELECT drs.setrole, r.rolname, r.rolcanlogin, d.datname,
           -- probectl.runs_once's value exactly, as the trigger compares it; an enum's in any
           -- case, as PostgreSQL takes it ('Replica' is stored as given)
           CASE WHEN s.setting = 'probectl.runs_once=checked' THEN 'probectl.runs_once=checked'
                WHEN lower(s.setting) = 'session_replication_role=replica' THEN 'session_replication_role=replica'
           END AS guard,
           s.setting,
           drs.setrole IN (0, (SELECT me.oid FROM pg_roles AS me WHERE me.rolname = current_user)) AS reaches_me
      FROM pg_db_role_setting AS drs
     CROSS JOIN LATERAL unnest(drs.setconfig) AS s(setting)
      LEFT JOIN pg_roles AS r ON r.oid = drs.setrole
      LEFT JOIN pg_database AS d ON d.oid = drs.setdatabase
     WHERE (drs.setdatabase = 0 OR d.datname = current_database())
), stored AS (
    SELECT coalesce('role ' || quote_ident(f.rolname), 'every role') AS role,
           coalesce('database ' || quote_ident(f.datname), 'every database') AS database,
           f.setting
      FROM found AS f
     WHERE f.guard IS NOT NULL
       AND (f.setrole = 0
            OR (f.rolcanlogin
                AND CASE f.guard
                    WHEN 'probectl.runs_once=checked' THEN has_any_column_privilege(f.setrole, 'probe_runs', 'INSERT')
                    ELSE EXISTS (SELECT 1 FROM unnest(ARRAY['probe_runs', 'probe_jobs', 'probe_rounds', 'servers']) AS t(name)
                                  WHERE has_any_column_privilege(f.setrole, t.name, 'INSERT, UPDATE')
                                     OR has_table_privilege(f.setrole, t.name, 'DELETE'))
                    END))
)
SELECT st.role, st.database, st.setting, '' AS source FROM stored AS st
UNION ALL
-- source: where the session got it (pg_settings: client, session, configuration file, ...)
SELECT 'this session', 'database ' || quote_ident(current_database()), g.setting,
       coalesce((SELECT ps.source FROM pg_settings AS ps WHERE ps.name = split_part(g.setting, '=', 1)), '')
  FROM guard AS g
 WHERE current_setting(split_part(g.setting, '=', 1), true) = split_part(g.setting, '=', 2)
   AND NOT EXISTS (SELECT 1 FROM found AS f WHERE f.reaches_me AND f.guard = g.setting)
 ORDER BY 1, 2, 3;

-- name: LiveTriggers
-- The triggers a migration made on the tables of probectl's schema (probe_runs's; not the foreign keys' own,
-- nor a partition's copy of its table's), each with whether it fires in a probectl session
-- (tgenabled O or A: not disabled, not kept for a replica), and, for a row trigger, which of its
-- table's partitions have their copy of it disabled or lack it.
SELECT c.relname::text AS table_name, t.tgname::text AS name, f.proname::text AS function,
       t.tgtype::smallint AS type, pg_get_triggerdef(t.oid) AS create,
       t.tgenabled IN ('O', 'A') AS enabled,
       coalesce((SELECT array_agg(p.relname::text ORDER BY p.relname)
                   FROM pg_inherits AS i
                   JOIN pg_class AS p ON p.oid = i.inhrelid
                  WHERE i.inhparent = c.oid
                    AND (t.tgtype & 1) = 1 -- a row trigger (TRIGGER_TYPE_ROW): the ones a partition copies
                    AND NOT EXISTS (SELECT 1 FROM pg_trigger AS k
                                     WHERE k.tgrelid = p.oid AND k.tgparentid = t.oid
                                       AND k.tgenabled IN ('O', 'A'))),
                '{}') AS off_in
  FROM pg_trigger AS t
  JOIN pg_class AS c ON c.oid = t.tgrelid
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
  JOIN pg_proc AS f ON f.oid = t.tgfoid
 WHERE n.oid = (SELECT pr.relnamespace FROM pg_class AS pr WHERE pr.oid = 'probe_runs'::regclass)
   AND NOT t.tgisinternal
   AND t.tgparentid = 0
 ORDER BY 1, 2;

-- name: TablesSchema
-- The schema of probectl's tables (the one probe_runs is found in), quoted for a statement.
SELECT quote_ident(n.nspname) AS schema
  FROM pg_class AS c
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE c.oid = 'probe_runs'::regclass;
