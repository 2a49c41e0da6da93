-- name: EnsureNextPartition
-- Make the first jobs and runs partition from @from up to @to that no partition covers yet, moving
-- the rows a default partition holds for its range, waiting at most @lock_timeout for each lock
-- (migrations/00019_partition_reads.sql); a range a prune dropped comes back with pruned_at set
-- and is not made again. @unit the unit (NULL: the retention setting), @dry_run. No row: nothing
-- left to make.
SELECT parent, table_name, range_from, range_to, moved_rows, pruned_at, export_id
  FROM probe_partitions_ensure_next(p_from => @from, p_to => @to, p_unit => @unit::text, p_dry_run => @dry_run,
                                      p_lock_timeout => @lock_timeout);

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
-- Detached, a runs partition is refused (SQLSTATE PRB01, the detach undone) when it holds a run
-- that export $3 does not reach (NULL: pruned without an export).
SELECT probe_partition_detach(p_table => $1, p_lock_timeout => $2, p_export_id => $3::bigint);

-- name: DropPartition
-- Drop a detached partition and record it pruned, with the export ($2) that holds its runs.
SELECT probe_partition_drop(p_table => $1, p_export_id => $2, p_lock_timeout => $3);

-- name: OldestKept
-- Where the kept runs begin: the end of the newest range pruned, when any was (NULL: nothing was
-- pruned, every run is kept). Not the start of the oldest partition kept: partitions made back
-- before a pruned range (maintain --from, for a restore) do not fill it.
SELECT max(p.range_to) AS oldest_kept
  FROM probe_partitions AS p
 WHERE p.parent = 'probe_runs' AND p.dropped_at IS NOT NULL;

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

-- name: SetRetentionUnit
-- Set the partition unit ($1) and leave how long runs are kept as it is: one statement, so that a
-- change of keep made meanwhile is never written back over with the value read before it.
UPDATE probe_retention
   SET partition_unit = $1, updated_by = $2, updated_at = now()
RETURNING partition_unit, keep, updated_by, updated_at;

-- name: SetRetention
-- Set how long runs are kept ($1, NULL: for ever) and the partition unit ($2, NULL: unchanged).
UPDATE probe_retention
   SET keep = $1, partition_unit = coalesce($2, partition_unit), updated_by = $3, updated_at = now()
RETURNING partition_unit, keep, updated_by, updated_at;

-- name: RedateStoppedPartitioning
-- A run of 00017 that stopped after its CHECK constraints (its exclusive step waits at most 10 s
-- for its locks) leaves probe_jobs unpartitioned with CHECK (requested_at < the first day of the
-- partitions), NOT VALID but enforced: from that day on, every new job is refused until 00017 is
-- run again and finishes. Before migrations run, a cutoff less than 2 days ahead is moved to 2
-- days after the newest job (and today), as 00017 chose it, constraint and record alike: 00017,
-- run again, validates the new constraint and partitions from there. Nothing when 00017 finished
-- or never began.
DO $redate$
DECLARE
    v_cut   timestamptz;
    v_first timestamptz;
BEGIN
    IF to_regclass('probe_partitions') IS NULL OR to_regclass('probe_jobs_legacy') IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'probe_jobs_legacy_range') THEN
        RETURN;
    END IF;
    SELECT p.range_to INTO v_cut FROM probe_partitions AS p WHERE p.table_name = 'probe_jobs_legacy';
    IF v_cut IS NULL OR v_cut >= date_trunc('day', now(), 'UTC') + interval '2 days' THEN
        RETURN;
    END IF;
    PERFORM set_config('lock_timeout', '10s', true);
    LOCK TABLE probe_jobs, probe_runs IN ACCESS EXCLUSIVE MODE;
    IF to_regclass('probe_jobs_legacy') IS NOT NULL THEN
        RETURN;  -- another migrate partitioned them meanwhile
    END IF;
    v_first := greatest(date_trunc('day', (SELECT max(j.requested_at) FROM probe_jobs AS j), 'UTC'),
                        date_trunc('day', now(), 'UTC')) + interval '2 days';
    EXECUTE format('ALTER TABLE probe_jobs DROP CONSTRAINT probe_jobs_legacy_range, '
                   'ADD CONSTRAINT probe_jobs_legacy_range CHECK (requested_at < %L) NOT VALID', v_first);
    EXECUTE format('ALTER TABLE probe_runs DROP CONSTRAINT IF EXISTS probe_runs_legacy_range, '
                   'ADD CONSTRAINT probe_runs_legacy_range CHECK (job_requested_at < %L) NOT VALID', v_first);
    UPDATE probe_partitions AS p SET range_to = v_first WHERE p.table_name IN ('probe_jobs_legacy', 'probe_runs_legacy');
    RAISE NOTICE '00017 had stopped half-way with its cutoff at %: moved to %', v_cut, v_first;
END
$redate$;
