-- name: EnsurePartitions
-- Make the jobs and runs partitions from $1 up to $2 that no partition covers yet, moving the
-- rows a default partition holds for their range (migrations/00017_partitions.sql); $3 the unit
-- (NULL: the retention setting), $4 dry run. One row per partition made (or to make).
SELECT parent, table_name, range_from, range_to, moved_rows
  FROM probe_partitions_ensure(p_from => $1, p_to => $2, p_unit => $3::text, p_dry_run => $4);

-- name: DefaultPartitionRows
-- The rows in the default partitions: stored for a day that had no partition when they came.
SELECT (SELECT count(*) FROM probe_jobs_default) AS jobs,
       (SELECT count(*) FROM probe_runs_default) AS runs;
