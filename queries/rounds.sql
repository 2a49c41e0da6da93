-- name: InsertRound
-- A round starts with its first heartbeat (migrations/00005_round_heartbeat.sql).
INSERT INTO probe_rounds (trigger, release_id, version, fanout, claim_limit, concurrency, settings, started_at,
                          heartbeat_at)
VALUES (@trigger, @release_id, @version, @fanout, @claim_limit, @concurrency, @settings::jsonb,
        coalesce(@now::timestamptz, now()), coalesce(@now::timestamptz, now()))
RETURNING id, started_at;

-- name: FinishRound
UPDATE probe_rounds
   SET finished_at  = coalesce($2::timestamptz, clock_timestamp()),
       heartbeat_at = coalesce($2::timestamptz, clock_timestamp())
 WHERE id = $1
RETURNING finished_at;

-- name: RoundHeartbeat
-- A running round says it is alive, by the database's clock: a round whose heartbeat is older
-- than RoundDeadAfter is dead (RoundState).
UPDATE probe_rounds
   SET heartbeat_at = coalesce($2::timestamptz, clock_timestamp())
 WHERE id = $1
   AND finished_at IS NULL;

-- name: RoundCounts
-- What a round left in the database: its jobs, their runs, the servers they covered, outcomes and
-- the jobs still open.
SELECT count(*)                                            AS jobs,
       count(r.id)                                         AS runs,
       count(DISTINCT j.server_id)                         AS servers,
       count(*) FILTER (WHERE j.outcome = 'ok')            AS ok,
       count(*) FILTER (WHERE j.outcome = 'failed')        AS failed,
       count(*) FILTER (WHERE j.outcome = 'error')         AS errors,
       count(*) FILTER (WHERE j.outcome = 'abandoned')     AS abandoned,
       count(*) FILTER (WHERE j.finished_at IS NULL)       AS open_jobs,
       count(r.id) FILTER (WHERE r.envelope IS NULL)       AS runs_unsigned
  FROM probe_jobs AS j
  LEFT JOIN probe_runs AS r ON r.job_id = j.id
 WHERE j.round_id = $1;

-- name: ListRoundJobs
-- Every job of the given rounds with its server and run, in request order.
SELECT j.id AS job_id, j.server_id, s.slug, s.endpoint_url, j.round_id, j.invocation, j.reason,
       j.requested_at, j.finished_at, j.outcome, j.error, r.id AS run_id, r.requests, r.envelope
  FROM probe_jobs AS j
  JOIN servers AS s ON s.id = j.server_id
  LEFT JOIN probe_runs AS r ON r.job_id = j.id
 WHERE j.round_id = ANY ($1::bigint[])
 ORDER BY j.requested_at, j.id;

-- name: InvocationClaims
-- How many jobs invocation $2 of round $1 has claimed so far, and the last of them (0: none), read
-- when an attempt of it begins: a retried invocation (River tries a failed one again) claims only
-- what its earlier attempts left of its share, and the jobs past the last are this attempt's
-- (LostClaim).
SELECT count(*)::int AS claimed, coalesce(max(id), 0)::bigint AS last_job
  FROM probe_jobs WHERE round_id = $1 AND invocation = $2;
