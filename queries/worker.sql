-- Queries of `probectl worker` (probe/worker): the schedule of the active release, and the rounds
-- whose invocations run as River jobs. River's table river_job is read, never written, here: River
-- writes it.

-- name: SetReleaseEvery
-- The schedule of a release just recorded, in the transaction that records it.
UPDATE releases SET round_every = $2::interval WHERE id = $1;

-- name: ActiveSchedule
-- The active release's schedule; a fan-out-off release runs on the one it was derived from.
-- every: zero when it has none. version: the release's, which only a worker of it runs.
SELECT r.id AS release_id, r.version, coalesce(r.round_every, d.round_every, interval '0') AS every
  FROM releases r
  LEFT JOIN releases d ON d.id = r.derived_from
 WHERE r.active;

-- name: LockSchedule
-- Serialises the decision to start a scheduled round (one tick at a time, on any machine): taken
-- in its own statement before the reads that decide it.
SELECT pg_advisory_xact_lock(2024061500, 8);

-- name: LastScheduledRound
-- How long ago the last scheduled round started, by the database's clock (NULL: never).
SELECT now() - max(started_at) AS since FROM probe_rounds WHERE trigger = 'cron';

-- name: LiveInvocations
-- Invocation jobs still waiting, running or to be retried, of any round. A running job is not
-- counted when its worker is dead, by the rule that judges rounds and workers dead
-- (queries.RoundDeadAfter, $1): the worker that attempted it last (River's attempted_by, the
-- worker's id in probectl_workers, 00010) stopped, or its heartbeat is older than $1. Nor is a
-- job running past its own timeout (the invocation's worst case, in its args): River would have
-- cancelled it on a live worker (this also covers a worker that never wrote a heartbeat row). River
-- rescues a dead worker's job much later; the jobs it claimed stay open until the in-flight window
-- ends, so the next round cannot take them.
SELECT count(*)::int
  FROM river_job j
 WHERE j.kind = 'probectl_invocation'
   AND (j.state IN ('available', 'pending', 'retryable', 'scheduled')
        OR (j.state = 'running'
            AND j.attempted_at + make_interval(secs => (j.args ->> 'timeout_seconds')::float8) > now()
            AND NOT EXISTS (SELECT 1 FROM probectl_workers w
                             WHERE w.id = j.attempted_by[array_length(j.attempted_by, 1)]
                               AND (w.stopped_at IS NOT NULL OR w.heartbeat_at < now() - $1::interval))));

-- name: RoundsDone
-- Open rounds whose invocations ran as River jobs and are all over (completed, discarded or
-- cancelled): the tick closes them.
SELECT r.id
  FROM probe_rounds r
 WHERE r.finished_at IS NULL
   AND EXISTS (SELECT 1 FROM river_job j
                WHERE j.kind = 'probectl_invocation' AND (j.args ->> 'round_id')::bigint = r.id)
   AND NOT EXISTS (SELECT 1 FROM river_job j
                    WHERE j.kind = 'probectl_invocation' AND (j.args ->> 'round_id')::bigint = r.id
                      AND j.state NOT IN ('completed', 'discarded', 'cancelled'))
 ORDER BY r.id;

-- name: RoundFinishedAt
SELECT finished_at FROM probe_rounds WHERE id = $1;
