-- A probe_runs row with every field chosen, in its job's partition (job_requested_at, 00017).
INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope)
VALUES ($1, (SELECT j.requested_at FROM probe_jobs AS j WHERE j.id = $1), $2, $3, $4, $5, $6, $7)
RETURNING id;
