-- name: StoredRunsEstimate
-- About how many runs are stored: the planner's estimate (free on any size; autovacuum analyzes a
-- table of runs long before it is big). 0 when probe_runs does not exist yet (an empty database)
-- or was never analyzed.
SELECT coalesce((SELECT greatest(c.reltuples, 0)::bigint
                   FROM pg_class AS c
                  WHERE c.oid = to_regclass('probe_runs')), 0) AS runs;
