-- Queries of the worker heartbeat (migrations/00010_workers.sql) and of what `status` shows of the
-- workers and their queue. River's tables (river_job, river_leader) are read, never written, here.

-- name: UpsertWorker
-- A worker says it is alive, what it runs and what waits in its spool, by the database's clock.
INSERT INTO probectl_workers (id, host, pid, version, max_workers, invocations_running, spool_files,
                              spool_results, spool_set_aside, started_at, heartbeat_at)
VALUES (@id, @host, @pid, @version, @max_workers, @invocations_running, @spool_files, @spool_results,
        @spool_set_aside, clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO UPDATE
   SET version             = excluded.version,
       max_workers         = excluded.max_workers,
       invocations_running = excluded.invocations_running,
       spool_files         = excluded.spool_files,
       spool_results       = excluded.spool_results,
       spool_set_aside     = excluded.spool_set_aside,
       heartbeat_at        = clock_timestamp(),
       stopped_at          = NULL;

-- name: StopWorker
-- A worker that stops cleanly says so: status shows it stopped, not dead.
UPDATE probectl_workers
   SET stopped_at = clock_timestamp(), heartbeat_at = clock_timestamp(), invocations_running = 0
 WHERE id = $1;

-- name: ForgetStaleWorkers
-- Rows of workers silent for longer than $1 are removed, so the table stays as small as the fleet.
DELETE FROM probectl_workers WHERE heartbeat_at < clock_timestamp() - $1::interval;

-- name: BeatWorkerRounds
-- The heartbeat of queued rounds (probe_rounds.heartbeat_at, 00005): those whose invocations this
-- worker runs ($1), and those with invocations still waiting in the queue, which a live worker
-- will run. A round whose only unfinished invocation is 'running' on another worker is not beaten
-- here: if that worker died, its round is seen dead, as a killed `run round` is.
UPDATE probe_rounds
   SET heartbeat_at = clock_timestamp()
 WHERE finished_at IS NULL
   AND (id = ANY ($1::bigint[])
        OR id IN (SELECT (j.args ->> 'round_id')::bigint
                    FROM river_job j
                   WHERE j.kind = 'probectl_invocation'
                     AND j.state IN ('available', 'pending', 'retryable', 'scheduled')));

-- name: WorkerTables
-- Whether the workers' tables are there (a database migrated by a binary from before 00010, or
-- never migrated for River, has no workers to show), and whether this is a standby: River's
-- river_leader is UNLOGGED, which a standby cannot read.
SELECT to_regclass('probectl_workers') IS NOT NULL AND to_regclass('river_job') IS NOT NULL
       AND to_regclass('river_leader') IS NOT NULL AS exist,
       pg_is_in_recovery()                         AS standby;

-- name: StatusWorkers
-- The workers heard from within @window of @now, alive ones first: alive when not stopped and
-- their last heartbeat is within @dead_after of @now.
SELECT w.id, w.host, w.pid, w.version, w.max_workers, w.started_at, w.heartbeat_at, w.stopped_at,
       w.invocations_running, w.spool_files, w.spool_results, w.spool_set_aside,
       (w.stopped_at IS NULL AND w.heartbeat_at > @now::timestamptz - @dead_after::interval) AS alive
  FROM probectl_workers w
 WHERE w.heartbeat_at > @now::timestamptz - @window::interval
 ORDER BY alive DESC, w.started_at, w.id
 LIMIT @limit;

-- name: StatusLeader
-- The worker River elected leader, if its term has not expired at $1 (none: no row). Not on a
-- standby: river_leader is UNLOGGED.
SELECT leader_id FROM river_leader WHERE expires_at > $1::timestamptz;

-- name: StatusQueue
-- probectl's invocations in River's queue: waiting to run, running, waiting for a retry, and over
-- the last $2 before $1: retried (a second or third attempt) and discarded (out of attempts).
SELECT count(*) FILTER (WHERE state IN ('available', 'pending', 'scheduled'))             AS waiting,
       count(*) FILTER (WHERE state = 'running')                                         AS running,
       count(*) FILTER (WHERE state = 'retryable')                                       AS retrying,
       count(*) FILTER (WHERE attempt > 1 AND created_at > $1::timestamptz - $2::interval) AS retried,
       count(*) FILTER (WHERE state = 'discarded' AND finalized_at > $1::timestamptz - $2::interval) AS discarded
  FROM river_job
 WHERE kind = 'probectl_invocation';
