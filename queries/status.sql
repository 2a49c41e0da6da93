-- What `probectl status` and the status page read: a few small aggregates, all taken in one READ
-- ONLY transaction by internal/status. Where a query takes the time the report is "as of", it is
-- $1 (StatusNow resolves NULL to now()); the others say what their parameters are.

-- name: StatusNow
-- The report's time: the one given, or the transaction's now().
SELECT coalesce($1::timestamptz, now());

-- name: StatusDue
-- Due servers: how many, how many of those are held by an open job (a round is on them), and the
-- one that has waited longest. An open job counts as in the claim: requested within the in-flight
-- window ($2, seconds).
WITH due AS (
    SELECT s.id, s.slug, s.next_check_at,
           EXISTS (SELECT 1 FROM probe_jobs AS j
                    WHERE j.server_id = s.id
                      AND j.finished_at IS NULL
                      AND j.requested_at > $1::timestamptz - make_interval(secs => $2::float8)) AS held
      FROM servers AS s
     WHERE s.status = 'active'
       AND s.next_check_at <= $1::timestamptz
)
SELECT (SELECT count(*) FROM due),
       (SELECT count(*) FROM due WHERE held),
       o.id, o.slug, o.next_check_at
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (SELECT id, slug, next_check_at FROM due ORDER BY next_check_at, id LIMIT 1) AS o ON true;

-- name: StatusOpenJobCounts
-- Every open job, and those past the in-flight window ($2, seconds): the claim closes those as
-- abandoned the next time it runs; until then they are what a dead probe left behind.
SELECT count(*),
       count(*) FILTER (WHERE j.requested_at <= $1::timestamptz - make_interval(secs => $2::float8))
  FROM probe_jobs AS j
 WHERE j.finished_at IS NULL;

-- name: StatusOpenJobs
-- The oldest open jobs first, at most $1, with their server and whether the server's next check
-- already moved past the job's request (the probe made its first write, advance, and not the
-- second, finish).
SELECT j.id, j.server_id, s.slug, j.round_id, j.invocation, j.reason, j.requested_at,
       s.next_check_at, s.next_check_at > j.requested_at
  FROM probe_jobs AS j
  JOIN servers AS s ON s.id = j.server_id
 WHERE j.finished_at IS NULL
 ORDER BY j.requested_at, j.id
 LIMIT $1;

-- name: StatusRecentRounds
-- The last $1 rounds, newest first, with what they left: jobs, runs, servers, failures (outcome
-- failed or error), abandoned and still-open jobs.
-- state is running, finished or dead as of $2: dead when the heartbeat is older than $3 seconds
-- or, for a round without one (a binary from before 00005), when it started more than $4 seconds
-- ago (queries.RoundDeadAfter, RoundDeadWithoutHeartbeat).
SELECT r.id, r.trigger, r.version, r.fanout, r.claim_limit, r.concurrency, r.started_at, r.finished_at,
       c.jobs, c.runs, c.servers, c.failures, c.abandoned, c.open_jobs, r.heartbeat_at,
       CASE WHEN r.finished_at IS NOT NULL THEN 'finished'
            WHEN coalesce(r.heartbeat_at + make_interval(secs => $3::float8),
                          r.started_at + make_interval(secs => $4::float8)) < $2::timestamptz THEN 'dead'
            ELSE 'running' END AS state
  FROM (SELECT * FROM probe_rounds ORDER BY started_at DESC, id DESC LIMIT $1) AS r
 CROSS JOIN LATERAL (
        SELECT count(*)                                              AS jobs,
               count(pr.id)                                          AS runs,
               count(DISTINCT j.server_id)                           AS servers,
               count(*) FILTER (WHERE j.outcome IN ('failed', 'error')) AS failures,
               count(*) FILTER (WHERE j.outcome = 'abandoned')       AS abandoned,
               count(*) FILTER (WHERE j.finished_at IS NULL)         AS open_jobs
          FROM probe_jobs AS j
          LEFT JOIN probe_runs AS pr ON pr.job_id = j.id
         WHERE j.round_id = r.id
       ) AS c
 ORDER BY r.started_at DESC, r.id DESC;

-- name: StatusRoundsTotal
SELECT count(*) FROM probe_rounds;
