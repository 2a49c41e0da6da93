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
-- The settings that switch a guard off around functions as shipped, set for a role that can log
-- in and store a run, or for every role, in this database or every database (pg_db_role_setting), or else in this
-- session (PGOPTIONS, a SET): 00029's probectl.runs_once = 'checked' outside probe_finish_many,
-- the function it belongs to (probe_runs_once off for every finish), and session_replication_role
-- = 'replica' (no trigger fires: left by a replication or migration tool, it takes every guard a
-- trigger holds). A session's value is said only when no stored setting of that name that
-- reaches this session's role explains it.
WITH guard (setting) AS (
    VALUES ('probectl.runs_once=checked'), ('session_replication_role=replica')
), stored AS (
    SELECT coalesce('role ' || quote_ident(r.rolname), 'every role') AS role,
           coalesce('database ' || quote_ident(d.datname), 'every database') AS database,
           s.setting,
           drs.setrole IN (0, (SELECT me.oid FROM pg_roles AS me WHERE me.rolname = current_user)) AS reaches_me
      FROM pg_db_role_setting AS drs
     CROSS JOIN LATERAL unnest(drs.setconfig) AS s(setting)
      LEFT JOIN pg_roles AS r ON r.oid = drs.setrole
      LEFT JOIN pg_database AS d ON d.oid = drs.setdatabase
     -- probectl.runs_once's value exactly, as the trigger compares it; an enum's in any case, as
     -- PostgreSQL takes it ('Replica' is stored as given)
     WHERE (s.setting = 'probectl.runs_once=checked' OR lower(s.setting) = 'session_replication_role=replica')
       AND (drs.setdatabase = 0 OR d.datname = current_database())
       -- a role's own setting counts where the role can log in and store a run (a loader's or a
       -- replication tool's role that cannot write probectl's tables is its own business)
       AND (drs.setrole = 0 OR (r.rolcanlogin AND has_table_privilege(r.oid, 'probe_runs', 'INSERT')))
)
SELECT st.role, st.database, st.setting, '' AS source FROM stored AS st
UNION ALL
-- source: where the session got it (pg_settings: client, session, configuration file, ...)
SELECT 'this session', 'database ' || quote_ident(current_database()), g.setting,
       coalesce((SELECT ps.source FROM pg_settings AS ps WHERE ps.name = split_part(g.setting, '=', 1)), '')
  FROM guard AS g
 WHERE current_setting(split_part(g.setting, '=', 1), true) = split_part(g.setting, '=', 2)
   AND NOT EXISTS (SELECT 1 FROM stored AS st WHERE st.reaches_me AND lower(st.setting) = g.setting)
 ORDER BY 1, 2, 3;

-- name: LiveTriggers
-- The triggers a migration made on the tables of the current schema (not the foreign keys' own,
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
 WHERE n.nspname = current_schema()
   AND NOT t.tgisinternal
   AND t.tgparentid = 0
 ORDER BY 1, 2;

-- name: CurrentSchema
-- The schema probectl's tables are found in (the first of the search_path that exists), quoted
-- for a statement.
SELECT quote_ident(current_schema()) AS schema;
