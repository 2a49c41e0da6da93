-- name: StoredRunsEstimate
-- About how many runs are stored: the planner's estimate when the table was ever analyzed (free on
-- any size), else a count (a table never analyzed is small or new).
SELECT CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint
            ELSE (SELECT count(*) FROM probe_runs) END AS runs
  FROM pg_class AS c
 WHERE c.oid = 'probe_runs'::regclass;
