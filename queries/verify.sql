-- Post-deploy verification (deploy verify). Read only: every query here runs inside one READ ONLY
-- transaction, so all figures come from one snapshot.

-- name: VerifyRounds
-- The first @limit rounds that started at or after @since under release @release_id (or under no
-- release: rounds recorded by a binary that did not know releases), with what each left in the
-- database. dead: unfinished, and its heartbeat older than @dead_after by the database's clock (a
-- round without one, from a binary before 00005: started more than @dead_without_heartbeat ago),
-- less a standby's replay lag (00014). recovered: dead, but it claimed jobs and every one of them
-- has its run, by the alerts' rule (alert_round_recovered, 00022): a dead round whose jobs were
-- closed as abandoned without a run is not recovered, its round.dead stands. lost counts those jobs.
SELECT d.id, d.started_at, d.finished_at, d.jobs, d.runs, d.servers, d.open_jobs, d.lost,
       d.runs_missing_envelope, d.heartbeat_at, d.dead,
       CASE WHEN d.dead THEN alert_round_recovered(d.id) ELSE false END AS recovered
  FROM (
        SELECT r.id, r.started_at, r.finished_at,
               c.jobs, c.runs, c.servers, c.open_jobs, c.lost, c.runs_missing_envelope, r.heartbeat_at,
               r.finished_at IS NULL
               AND coalesce(r.heartbeat_at + @dead_after::interval, r.started_at + @dead_without_heartbeat::interval) < now() - probectl_replay_lag() AS dead
          FROM probe_rounds AS r
         CROSS JOIN LATERAL (
               SELECT count(*)                                        AS jobs,
                      count(pr.id)                                    AS runs,
                      count(DISTINCT j.server_id)                     AS servers,
                      count(*) FILTER (WHERE j.finished_at IS NULL)   AS open_jobs,
                      count(*) FILTER (WHERE j.outcome = 'abandoned' AND pr.id IS NULL) AS lost,
                      count(pr.id) FILTER (WHERE pr.envelope IS NULL) AS runs_missing_envelope
                 FROM probe_jobs AS j
                 LEFT JOIN probe_runs AS pr ON pr.job_id = j.id
                WHERE j.round_id = r.id
               ) AS c
         WHERE r.started_at >= @since
           AND (r.release_id IS NULL OR r.release_id = @release_id)
         ORDER BY r.started_at, r.id
         LIMIT @limit
       ) AS d
 ORDER BY d.started_at, d.id;

-- name: VerifyRoundProgress
-- How many of the first @limit rounds after @since under release @release_id exist, and how many
-- have finished: the cheap question deploy verify --wait asks until the answer is "all of them". A
-- dead round (as in VerifyRounds) counts as finished: waiting longer changes nothing, verify fails
-- it.
SELECT count(*) AS found,
       count(*) FILTER (WHERE finished_at IS NOT NULL
                           OR coalesce(heartbeat_at + @dead_after::interval, started_at + @dead_without_heartbeat::interval)
                              < now() - probectl_replay_lag())
           AS finished
  FROM (SELECT finished_at, heartbeat_at, started_at
          FROM probe_rounds
         WHERE started_at >= @since
           AND (release_id IS NULL OR release_id = @release_id)
         ORDER BY started_at, id
         LIMIT @limit) AS first_rounds;

-- name: VerifyEnvelopes
-- Every run of the given rounds that has an envelope, with the server the run is stored against
-- and when its job finished: by the database's clock, as a key's retirement is, and after the run
-- was signed (a key retired by then must not have signed it). The run's own finish time, from the
-- prober's clock, only stands in for a job left open.
SELECT j.round_id, j.id AS job_id, pr.id AS run_id, s.id AS server_id, s.slug, s.endpoint_url,
       coalesce(j.finished_at, pr.finished_at) AS finished_at, pr.envelope
  FROM probe_jobs AS j
  JOIN probe_runs AS pr ON pr.job_id = j.id
  JOIN servers AS s ON s.id = pr.server_id
 WHERE j.round_id = ANY ($1::bigint[])
   AND pr.envelope IS NOT NULL
 ORDER BY j.id;

-- name: ReleaseActiveUntil
-- When release $1 stopped being active after $2: the first deploy or rollback away from it
-- (NULL while it is still active).
SELECT min(at) AS until
  FROM release_events
 WHERE from_release_id = $1
   AND at > $2;

-- name: JobRounds
-- The round of each of the given jobs, to put a duplicate pair in the row of its round.
SELECT id AS job_id, round_id
  FROM probe_jobs
 WHERE id = ANY ($1::bigint[])
   AND round_id IS NOT NULL;

-- name: VerifyHealth
-- The health check of deploy verify: per server checked in the given rounds (@rounds, the
-- release's), its jobs there with an outcome (ok, failed or error: an abandoned or open job
-- observed nothing) and how many were ok, and the outcome of its last job in a round of the
-- baseline release (@baseline, the release active before; NULL: none) that started before the
-- release went live (@since): NULL when that release never checked it.
WITH cur AS (
    SELECT j.server_id, count(*) AS jobs, count(*) FILTER (WHERE j.outcome = 'ok') AS ok
      FROM probe_jobs AS j
     WHERE j.round_id = ANY (@rounds::bigint[])
       AND j.outcome IN ('ok', 'failed', 'error')
     GROUP BY j.server_id
)
SELECT c.server_id, s.slug, c.jobs, c.ok, b.outcome AS baseline_outcome
  FROM cur AS c
  JOIN servers AS s ON s.id = c.server_id
  LEFT JOIN LATERAL (
        SELECT j.outcome
          FROM probe_jobs AS j
          JOIN probe_rounds AS r ON r.id = j.round_id
         WHERE j.server_id = c.server_id
           AND r.release_id = @baseline::bigint
           AND r.started_at < @since::timestamptz
           AND j.outcome IN ('ok', 'failed', 'error')
         ORDER BY j.requested_at DESC, j.id DESC
         LIMIT 1
       ) AS b ON true
 ORDER BY s.slug;
