-- name: FinishTx
-- The default finish: probe_finish (migrations/00004_fencing.sql) advances next_check_at, stores the
-- run and finishes the job in one transaction, if job $1 is still the claim of server $11 made at
-- $12 (NULL: any time). After an asynchronous failover the new primary may lack the claim and
-- give its id to another server's: then probe_finish is not called, and no row comes back.
SELECT f.run_id, f.advanced, f.job_finished, f.finished_at
  FROM (SELECT 1 FROM probe_jobs AS j
         WHERE j.id = $1 AND j.server_id = $11
           AND ($12::timestamptz IS NULL OR j.requested_at = $12::timestamptz)) AS claim
 CROSS JOIN LATERAL
       probe_finish(p_job_id                => $1,
                    p_claimed_next_check_at => $2,
                    p_outcome               => $3,
                    p_error                 => $4,
                    p_started_at            => $5,
                    p_check_finished_at     => $6,
                    p_requests              => $7,
                    p_result                => $8,
                    p_envelope              => $9,
                    p_now                   => $10::timestamptz) AS f;

-- name: AdvanceServer
-- The first write of an advance-first finish: move next_check_at on by the server's interval, as a
-- compare-and-set on the value that was claimed, and only if the job ($4) is this server's and
-- was not closed as abandoned: a late finish has lost its lease and never moves the server on,
-- and a job never moves another server on (a spooled line that names one job and another server
-- advances nothing). No row means the server was re-checked, rescued, paused or delisted
-- meanwhile, the job was abandoned or is another server's; that change wins. (A job this prober
-- finished itself still advances: the incident replay's order.)
UPDATE servers AS s
   SET next_check_at = coalesce($3::timestamptz, clock_timestamp()) + s.check_interval
 WHERE s.id = $1
   AND s.next_check_at = $2
   AND s.status = 'active'
   AND EXISTS (SELECT 1 FROM probe_jobs AS j
                WHERE j.id = $4 AND j.server_id = s.id AND j.outcome IS DISTINCT FROM 'abandoned')
RETURNING s.next_check_at;

-- name: FinishJob
-- The second write of an advance-first finish, one statement: store the run and finish the job if
-- it is still open; a run whose job was closed meanwhile is stored late (probectl's fault). Returns
-- the run's id and whether the job was still open. Only job $1 as the claim of server $10 made at
-- $11 (NULL: any time): after an asynchronous failover its id may be another server's claim, and
-- then nothing is written and no row comes back.
WITH finished AS (
    UPDATE probe_jobs AS j
       SET finished_at = coalesce($9::timestamptz, clock_timestamp()),
           outcome     = $2,
           error       = nullif($3, '')
     WHERE j.id = $1
       AND j.server_id = $10
       AND ($11::timestamptz IS NULL OR j.requested_at = $11::timestamptz)
       AND j.finished_at IS NULL
    RETURNING j.id, j.finished_at
), run AS (
    INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope, late)
    SELECT j.id, j.requested_at, j.server_id, $4, $5, $6, $7, $8, j.finished_at IS NOT NULL
      FROM probe_jobs AS j
     WHERE j.id = $1
       AND j.server_id = $10
       AND ($11::timestamptz IS NULL OR j.requested_at = $11::timestamptz)
    RETURNING id
)
SELECT run.id AS run_id, false AS advanced, EXISTS (SELECT 1 FROM finished) AS job_finished,
       (SELECT f.finished_at FROM finished AS f) AS finished_at
  FROM run;

-- name: RunLate
-- Whether job $1's run was stored late (its job had been closed as abandoned first). A finish that
-- found its job already closed asks: a run stored by an earlier attempt of the same finish (a batch
-- whose answer came late, a commit whose answer was lost) is not late, and the job was never
-- abandoned.
SELECT r.late FROM probe_runs AS r WHERE r.job_id = $1;

-- name: FinishMany
-- The set-based finish of a batch (probe_finish_many, migrations/00020_finish_set.sql): one row
-- per job, in the batch's order (ord, from 1), each judged as FinishTx judges it; a job that is not
-- the claim of its server made at its time comes back with no run (run_id NULL): nothing was
-- written for it.
SELECT f.ord, f.job_id, f.run_id, f.advanced, f.job_finished, f.finished_at
  FROM probe_finish_many(p_job_ids           => @job_ids,
                         p_server_ids        => @server_ids,
                         p_requested_ats     => @requested_ats,
                         p_claimed           => @claimed,
                         p_outcomes          => @outcomes,
                         p_errors            => @errors,
                         p_started_ats       => @started_ats,
                         p_check_finished_at => @check_finished_at,
                         p_requests          => @requests,
                         p_results           => @results::jsonb[],
                         p_envelopes         => @envelopes::jsonb[],
                         p_now               => @now::timestamptz) AS f;
