-- What `probectl status` and the status page read: a few small aggregates, all taken in one READ
-- ONLY transaction by internal/status. Where a query takes the time the report is "as of", it is
-- $1 (StatusNow resolves NULL to now()); the others say what their parameters are.

-- name: StatusNow
-- The report's time: the one given, or the transaction's now() less a standby's replay lag
-- (migrations/00014): the moment the data read is as of, by which staleness is judged.
SELECT coalesce($1::timestamptz, now() - probectl_replay_lag()) AS now;

-- name: DatabaseRole
-- Whether this session reads a hot standby, and how far behind its primary it is.
SELECT pg_is_in_recovery() AS standby, probectl_replay_lag() AS replay_lag;

-- name: StatusDue
-- Due servers: how many, and how many of those are held by an open job (a round is on them). An
-- open job counts as in the claim: requested within the in-flight window ($2).
WITH due AS (
    SELECT EXISTS (SELECT 1 FROM probe_jobs AS j
                    WHERE j.server_id = s.id
                      AND j.finished_at IS NULL
                      AND j.requested_at > $1::timestamptz - $2::interval) AS held
      FROM servers AS s
     WHERE s.status = 'active'
       AND s.next_check_at <= $1::timestamptz
)
SELECT count(*) AS count, count(*) FILTER (WHERE held) AS held FROM due;

-- name: StatusOldestDue
-- The due server that has waited longest (no row: none is due).
SELECT s.id AS server_id, s.slug, s.next_check_at
  FROM servers AS s
 WHERE s.status = 'active'
   AND s.next_check_at <= $1::timestamptz
 ORDER BY s.next_check_at, s.id
 LIMIT 1;

-- name: StatusRecentRounds
-- The last @limit rounds, newest first, with what they left: jobs, runs, servers, failures
-- (outcome failed or error), abandoned and still-open jobs.
-- state is running, finished, dead or recovered as of @now: dead when the heartbeat is older than
-- @dead_after (an interval) or, for a round without one (a binary from before 00005), when it
-- started more than @dead_without_heartbeat ago (queries.RoundDeadAfter,
-- RoundDeadWithoutHeartbeat); recovered when dead but it claimed jobs and every one of them has its
-- run (runs recover stored them): the alerts' rule, alert_round_recovered (00022), so a round the
-- screens call recovered is one whose round.dead is resolved, and a dead round whose jobs were
-- closed as abandoned without a run stays dead. lost counts those jobs: checks the round claimed and
-- nothing stored.
SELECT r.id, r.trigger, r.version, r.fanout, r.claim_limit, r.concurrency, r.started_at, r.finished_at,
       c.jobs, c.runs, c.servers, c.failures, c.abandoned, c.lost, c.open_jobs, r.heartbeat_at,
       CASE WHEN r.finished_at IS NOT NULL THEN 'finished'
            WHEN coalesce(r.heartbeat_at + @dead_after::interval,
                          r.started_at + @dead_without_heartbeat::interval) >= @now::timestamptz THEN 'running'
            WHEN alert_round_recovered(r.id) THEN 'recovered'
            ELSE 'dead' END AS state
  FROM (SELECT * FROM probe_rounds ORDER BY started_at DESC, id DESC LIMIT @limit) AS r
 CROSS JOIN LATERAL (
        SELECT count(*)                                              AS jobs,
               count(pr.id)                                          AS runs,
               count(DISTINCT j.server_id)                           AS servers,
               count(*) FILTER (WHERE j.outcome IN ('failed', 'error')) AS failures,
               count(*) FILTER (WHERE j.outcome = 'abandoned')       AS abandoned,
               count(*) FILTER (WHERE j.outcome = 'abandoned' AND pr.id IS NULL) AS lost,
               count(*) FILTER (WHERE j.finished_at IS NULL)         AS open_jobs
          FROM probe_jobs AS j
          LEFT JOIN probe_runs AS pr ON pr.job_id = j.id
         WHERE j.round_id = r.id
       ) AS c
 ORDER BY r.started_at DESC, r.id DESC;

-- name: StatusRoundsTotal
SELECT count(*) AS count FROM probe_rounds;
