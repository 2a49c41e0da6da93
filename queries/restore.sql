-- name: ReplayedJob
-- The job a spooled or journaled result names, as the database holds it now, and whether it has
-- its run. After an asynchronous failover the id may belong to another claim: the caller compares
-- server, round and requested time before it takes this job for the result's.
SELECT j.id AS job_id, j.server_id, j.round_id, j.requested_at,
       EXISTS (SELECT 1 FROM probe_runs AS r WHERE r.job_id = j.id) AS stored
  FROM probe_jobs AS j
 WHERE j.id = $1;

-- name: RestoredJob
-- The job a result whose claim had vanished was restored under, if it was (migrations/00014).
SELECT rj.job_id
  FROM probe_restored_jobs AS rj
 WHERE rj.server_id = @server_id
   AND rj.original_job_id = @original_job_id
   AND rj.original_requested_at = @original_requested_at;

-- name: RestoreRun
-- Stores a result whose claim the database no longer holds (an asynchronous standby promoted
-- before the claim reached it), in one statement: a finished job of its own (under the original id
-- when no job holds it, the identity moved past it; else under a new one), the run, the mark in
-- probe_restored_jobs, and the advance the lost finish would have made: next_check_at to the
-- claim's time plus the interval, only forward, only while the server is active, and only if no
-- claim of the server came after the lost one (a newer schedule stands). No row: the server is
-- gone. A second restore of the same result fails on probe_restored_jobs' unique key.
-- The claim's time is the spool's or journal's word: one in the future (a clock gone wrong, a
-- corrupt line) is taken as now, so that it can neither hold the server's schedule off nor make the
-- spacing guard skip it; the original value is kept in probe_restored_jobs, which matching reads.
WITH claimed AS (
    SELECT least(@requested_at::timestamptz, now()) AS at
), free AS (
    SELECT NOT EXISTS (SELECT 1 FROM probe_jobs WHERE id = @original_job_id) AS free
), bump AS (
    SELECT setval(pg_get_serial_sequence('probe_jobs', 'id'), @original_job_id::bigint)
     WHERE (SELECT free FROM free)
       AND coalesce(pg_sequence_last_value(pg_get_serial_sequence('probe_jobs', 'id')::regclass), 0)
           < @original_job_id::bigint
), job AS (
    INSERT INTO probe_jobs (id, server_id, round_id, invocation, reason, requested_at, finished_at, outcome, error)
    OVERRIDING SYSTEM VALUE
    SELECT CASE WHEN (SELECT free FROM free) AND (SELECT count(*) FROM bump) >= 0
                THEN @original_job_id::bigint
                ELSE nextval(pg_get_serial_sequence('probe_jobs', 'id')) END,
           s.id, NULL, NULL, 'scheduled', (SELECT at FROM claimed), clock_timestamp(), @outcome, nullif(@error::text, '')
      FROM servers AS s
     WHERE s.id = @server_id
    RETURNING id, server_id, requested_at
), run AS (
    INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope, late)
    SELECT job.id, job.requested_at, job.server_id, @started_at, @check_finished_at, @requests, @result, @envelope, false
      FROM job
    RETURNING id
), mark AS (
    INSERT INTO probe_restored_jobs (job_id, server_id, original_job_id, original_round_id, original_requested_at, source)
    SELECT job.id, job.server_id, @original_job_id, @original_round_id, @requested_at, @source
      FROM job
), advanced AS (
    UPDATE servers AS s
       SET next_check_at = (SELECT at FROM claimed) + s.check_interval
     WHERE s.id = @server_id
       AND s.status = 'active'
       AND s.next_check_at < (SELECT at FROM claimed) + s.check_interval
       AND EXISTS (SELECT 1 FROM job)
       AND NOT EXISTS (SELECT 1 FROM probe_jobs AS j
                        WHERE j.server_id = s.id AND j.requested_at > (SELECT at FROM claimed))
    RETURNING s.id
)
SELECT job.id AS job_id, run.id AS run_id, EXISTS (SELECT 1 FROM advanced) AS advanced
  FROM job, run;

-- name: ClaimLockExclusive
-- The claims' advisory lock (ClaimLockKey), taken exclusively for the rest of the transaction: a
-- leasing claim takes it shared, so no claim runs (nor takes a job id) while this is held.
SELECT pg_advisory_xact_lock($1::bigint);

-- name: CurrentTimeline
-- The timeline of the WAL the primary writes now: the first 8 hex digits of the current WAL
-- file's name. A promotion starts a new timeline, and this changes at once (pg_control's
-- checkpoint timeline waits for the first checkpoint after it). Not on a standby.
SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint AS timeline;

-- name: ObserveTimeline
-- Records that a probectl process saw the database on timeline @timeline (migrations/00014), once:
-- the first to see it writes the row, with the timeline before it and when. Returns the row.
WITH seen AS (
    INSERT INTO probectl_timelines (timeline_id, previous_timeline_id, seen_by)
    SELECT @timeline::bigint,
           (SELECT max(t.timeline_id) FROM probectl_timelines AS t WHERE t.timeline_id < @timeline::bigint),
           @seen_by
    ON CONFLICT (timeline_id) DO NOTHING
    RETURNING timeline_id, previous_timeline_id, first_seen_at, true AS new
)
SELECT timeline_id, previous_timeline_id, first_seen_at, new FROM seen
UNION ALL
SELECT timeline_id, previous_timeline_id, first_seen_at, false FROM probectl_timelines
 WHERE timeline_id = @timeline::bigint AND NOT EXISTS (SELECT 1 FROM seen);
