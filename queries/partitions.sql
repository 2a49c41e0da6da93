-- name: EnsurePartitions
-- Make the jobs and runs partitions from @from up to @to that no partition covers yet, moving the
-- rows a default partition holds for their range (migrations/00017_partitions.sql); @unit the unit
-- (NULL: the retention setting), @dry_run. One row per partition made (or to make).
SELECT parent, table_name, range_from, range_to, moved_rows
  FROM probe_partitions_ensure(p_from => @from, p_to => @to, p_unit => @unit::text, p_dry_run => @dry_run);

-- name: PrunablePartitions
-- The partitions wholly before $1 still there, oldest first, with their runs and covering export.
-- The legacy partition starts at -infinity: read as NULL.
SELECT nullif(range_from, '-infinity') AS range_from, range_to, jobs_table, runs_table, runs, export_id
  FROM probe_partitions_prunable(p_before => $1);

-- name: OldestOpenJobBefore
-- The oldest open job requested before $1: prune must not drop its partition.
SELECT oj.job_id, s.slug AS server, oj.requested_at
  FROM probe_open_jobs AS oj
  JOIN servers AS s ON s.id = oj.server_id
 WHERE oj.requested_at < $1
 ORDER BY oj.requested_at
 LIMIT 1;

-- name: DetachPartition
-- Detach one partition, waiting at most $2 for the lock; false when it was detached already.
SELECT probe_partition_detach(p_table => $1, p_lock_timeout => $2);

-- name: DropPartition
-- Drop a detached partition and record it pruned, with the export ($2) that holds its runs.
SELECT probe_partition_drop(p_table => $1, p_export_id => $2, p_lock_timeout => $3);

-- name: OldestKept
-- Where the kept runs begin: the start of the oldest partition not pruned, when any was pruned
-- (NULL: nothing was pruned, every run is kept).
SELECT CASE WHEN EXISTS (SELECT 1 FROM probe_partitions AS d WHERE d.dropped_at IS NOT NULL)
            THEN (SELECT nullif(min(p.range_from), '-infinity') FROM probe_partitions AS p
                   WHERE p.parent = 'probe_runs' AND p.dropped_at IS NULL
                     AND p.range_to > '-infinity')  -- the empty legacy partition of a new database
       END AS oldest_kept;

-- name: PrunedRun
-- Where a run that is not stored went: the pruned runs partition whose id range holds it, and the
-- export that archived it (NULL when pruned without one).
SELECT p.table_name, nullif(p.range_from, '-infinity') AS range_from, p.range_to, p.dropped_at, e.id AS export_id, e.file_name AS archive
  FROM probe_partitions AS p
  LEFT JOIN probe_run_exports AS e ON e.id = p.export_id
 WHERE p.parent = 'probe_runs' AND p.dropped_at IS NOT NULL
   AND $1 BETWEEN p.min_run_id AND p.max_run_id
 ORDER BY p.range_from
 LIMIT 1;

-- name: GetRetention
-- The retention setting (one row, 00017).
SELECT partition_unit, keep, updated_by, updated_at FROM probe_retention;

-- name: SetRetention
-- Set how long runs are kept ($1, NULL: for ever) and the partition unit ($2, NULL: unchanged).
UPDATE probe_retention
   SET keep = $1, partition_unit = coalesce($2, partition_unit), updated_by = $3, updated_at = now()
RETURNING partition_unit, keep, updated_by, updated_at;
