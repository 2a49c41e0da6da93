-- name: FinishTx
-- The default finish: probe_finish (migrations/00004_fencing.sql) advances next_check_at, stores the
-- run and finishes the job in one transaction, if job @job_id is still the claim of server
-- @server_id made at @requested_at (NULL: any time). After an asynchronous failover the new primary
-- may lack the claim and give its id to another server's: then probe_finish is not called, and no
-- row comes back.
SELECT f.run_id, f.advanced, f.job_finished, f.finished_at
  FROM (SELECT 1 FROM probe_jobs AS j
         WHERE j.id = @job_id AND j.server_id = @server_id
           AND (@requested_at::timestamptz IS NULL OR j.requested_at = @requested_at::timestamptz)) AS claim
 CROSS JOIN LATERAL
       probe_finish(p_job_id                => @job_id,
                    p_claimed_next_check_at => @claimed_next_check_at,
                    p_outcome               => @outcome,
                    p_error                 => @error,
                    p_started_at            => @started_at,
                    p_check_finished_at     => @check_finished_at,
                    p_requests              => @requests,
                    p_result                => @result,
                    p_envelope              => @envelope,
                    p_now                   => @now::timestamptz) AS f;

-- name: AdvanceServer
-- The first write of an advance-first finish: move next_check_at on by the server's interval, as a
-- compare-and-set on the value that was claimed, and only if the job (@job_id) is this server's and
-- was not closed as abandoned: a late finish has lost its lease and never moves the server on,
-- and a job never moves another server on (a spooled line that names one job and another server
-- advances nothing). No row means the server was re-checked, rescued, paused or delisted
-- meanwhile, the job was abandoned or is another server's; that change wins. (A job this prober
-- finished itself still advances: the incident replay's order.)
UPDATE servers AS s
   SET next_check_at = coalesce(@now::timestamptz, clock_timestamp()) + s.check_interval
 WHERE s.id = @server_id
   AND s.next_check_at = @claimed_next_check_at
   AND s.status = 'active'
   AND EXISTS (SELECT 1 FROM probe_jobs AS j
                WHERE j.id = @job_id AND j.server_id = s.id AND j.outcome IS DISTINCT FROM 'abandoned')
RETURNING s.next_check_at;

-- name: FinishJob
-- The second write of an advance-first finish, one statement: store the run and finish the job if
-- it is still open; a run whose job was closed meanwhile is stored late (probectl's fault). Returns
-- the run's id and whether the job was still open. Only job @job_id as the claim of server
-- @server_id made at @requested_at (NULL: any time): after an asynchronous failover its id may be
-- another server's claim, and then nothing is written and no row comes back.
WITH finished AS (
    UPDATE probe_jobs AS j
       SET finished_at = coalesce(@now::timestamptz, clock_timestamp()),
           outcome     = @outcome,
           error       = nullif(@error, '')
     WHERE j.id = @job_id
       AND j.server_id = @server_id
       AND (@requested_at::timestamptz IS NULL OR j.requested_at = @requested_at::timestamptz)
       AND j.finished_at IS NULL
    RETURNING j.id, j.finished_at
), run AS (
    INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope, late)
    SELECT j.id, j.requested_at, j.server_id, @started_at, @check_finished_at, @requests, @result, @envelope,
           j.finished_at IS NOT NULL
      FROM probe_jobs AS j
     WHERE j.id = @job_id
       AND j.server_id = @server_id
       AND (@requested_at::timestamptz IS NULL OR j.requested_at = @requested_at::timestamptz)
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
