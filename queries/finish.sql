-- name: FinishTx
-- The default finish: probe_finish (migrations/00004_fencing.sql) advances next_check_at, stores the
-- run and finishes the job in one transaction.
SELECT run_id, advanced, job_finished, finished_at
  FROM probe_finish(p_job_id                => $1,
                    p_claimed_next_check_at => $2,
                    p_outcome               => $3,
                    p_error                 => $4,
                    p_started_at            => $5,
                    p_check_finished_at     => $6,
                    p_requests              => $7,
                    p_result                => $8,
                    p_envelope              => $9,
                    p_now                   => $10::timestamptz);

-- name: AdvanceServer
-- The first write of an advance-first finish: move next_check_at on by the server's interval, as a
-- compare-and-set on the value that was claimed, and only if the job ($4) was not closed as
-- abandoned: a late finish has lost its lease and never moves the server on. No row means the
-- server was re-checked, rescued, paused or delisted meanwhile, or the job was abandoned; that
-- change wins. (A job this prober finished itself still advances: the incident replay's order.)
UPDATE servers AS s
   SET next_check_at = coalesce($3::timestamptz, clock_timestamp()) + s.check_interval
 WHERE s.id = $1
   AND s.next_check_at = $2
   AND s.status = 'active'
   AND EXISTS (SELECT 1 FROM probe_jobs AS j WHERE j.id = $4 AND j.outcome IS DISTINCT FROM 'abandoned')
RETURNING s.next_check_at;

-- name: FinishJob
-- The second write of an advance-first finish, one statement: store the run and finish the job if
-- it is still open; a run whose job was closed meanwhile is stored late (probectl's fault). Returns
-- the run's id and whether the job was still open.
WITH finished AS (
    UPDATE probe_jobs AS j
       SET finished_at = coalesce($9::timestamptz, clock_timestamp()),
           outcome     = $2,
           error       = nullif($3, '')
     WHERE j.id = $1
       AND j.finished_at IS NULL
    RETURNING j.id, j.finished_at
), run AS (
    INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope, late)
    SELECT j.id, j.requested_at, j.server_id, $4, $5, $6, $7, $8, j.finished_at IS NOT NULL
      FROM probe_jobs AS j
     WHERE j.id = $1
    RETURNING id
)
SELECT run.id AS run_id, false AS advanced, EXISTS (SELECT 1 FROM finished) AS job_finished,
       (SELECT f.finished_at FROM finished AS f) AS finished_at
  FROM run;

-- name: RunStored
-- Whether job $1 has its run already: a replayed or retried finish asks first, since probe_finish
-- (migrations/00004_fencing.sql) answers a repeated job with a no-op that looks like a late finish.
SELECT EXISTS (SELECT 1 FROM probe_runs AS r WHERE r.job_id = $1);
