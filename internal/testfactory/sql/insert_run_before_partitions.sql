-- A probe_runs row with every field chosen, on a schema before 00017 (no partition key).
INSERT INTO probe_runs (job_id, server_id, started_at, finished_at, requests, result, envelope)
VALUES (@job_id, @server_id, @started_at, @finished_at, @requests, @result, @envelope)
RETURNING id;
