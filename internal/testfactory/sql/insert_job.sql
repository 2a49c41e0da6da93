-- A probe_jobs row with every field chosen.
INSERT INTO probe_jobs (server_id, round_id, invocation, reason, requested_at, finished_at, outcome, error)
VALUES (@server_id, @round_id, @invocation, @reason, @requested_at, @finished_at, @outcome, @error)
RETURNING id;
