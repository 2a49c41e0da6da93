-- A probe_runs row with every field chosen, in its job's partition (job_requested_at, 00017).
INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope)
VALUES (@job_id, (SELECT j.requested_at FROM probe_jobs AS j WHERE j.id = @job_id), @server_id, @started_at,
        @finished_at, @requests, @result, @envelope)
RETURNING id;
