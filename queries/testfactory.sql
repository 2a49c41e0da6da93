-- Rows with every field chosen, for tests: the real write paths (claim, finish) never use these.

-- name: FactoryInsertServer
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, status, maintainer_claimed_at,
                     next_check_at, created_at)
VALUES ($1, $2, $3, $4, make_interval(secs => $5::float8), $6, $7, $8, coalesce($9::timestamptz, now()))
RETURNING id;

-- name: FactoryInsertRound
INSERT INTO probe_rounds (trigger, release_id, version, fanout, claim_limit, concurrency, started_at, finished_at,
                          heartbeat_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING id;

-- name: FactoryInsertJob
INSERT INTO probe_jobs (server_id, round_id, invocation, reason, requested_at, finished_at, outcome, error)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id;

-- name: FactoryInsertRun
INSERT INTO probe_runs (job_id, server_id, started_at, finished_at, requests, result, envelope)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING id;
