-- Releases and their history. Every write here runs inside one transaction that first takes
-- LockReleases; rollbacks write only releases and release_events.

-- name: LockReleases
-- Serialises every change of the active release (deploy record, rollback). Taken in its own
-- statement before anything is read: a later statement under READ COMMITTED then sees whatever
-- the previous holder committed. The two-key form keeps clear of other advisory locks.
SELECT pg_advisory_xact_lock(2024061500, 3);

-- name: ActiveRelease
SELECT id, version, fanout, claim_limit, concurrency, extract(epoch FROM min_spacing)::float8,
       finish_mode, ways_back, note, deployed_at, deployed_by, active, kind, previous_id,
       derived_from, rolled_back_at, rolled_back_by, rollback_reason,
       extract(epoch FROM request_timeout)::float8, extract(epoch FROM max_duration)::float8
FROM releases
WHERE active;

-- name: ActiveReleaseForUpdate
SELECT id, version, fanout, claim_limit, concurrency, extract(epoch FROM min_spacing)::float8,
       finish_mode, ways_back, note, deployed_at, deployed_by, active, kind, previous_id,
       derived_from, rolled_back_at, rolled_back_by, rollback_reason,
       extract(epoch FROM request_timeout)::float8, extract(epoch FROM max_duration)::float8
FROM releases
WHERE active
FOR UPDATE;

-- name: GetRelease
SELECT id, version, fanout, claim_limit, concurrency, extract(epoch FROM min_spacing)::float8,
       finish_mode, ways_back, note, deployed_at, deployed_by, active, kind, previous_id,
       derived_from, rolled_back_at, rolled_back_by, rollback_reason,
       extract(epoch FROM request_timeout)::float8, extract(epoch FROM max_duration)::float8
FROM releases
WHERE id = $1;

-- name: ListReleases
SELECT id, version, fanout, claim_limit, concurrency, extract(epoch FROM min_spacing)::float8,
       finish_mode, ways_back, note, deployed_at, deployed_by, active, kind, previous_id,
       derived_from, rolled_back_at, rolled_back_by, rollback_reason,
       extract(epoch FROM request_timeout)::float8, extract(epoch FROM max_duration)::float8
FROM releases
ORDER BY id DESC
LIMIT $1;

-- name: InsertRelease
-- $14 stands in for now() in tests.
INSERT INTO releases (version, fanout, claim_limit, concurrency, min_spacing, finish_mode, ways_back,
                      note, deployed_by, kind, previous_id, derived_from, active, deployed_at,
                      request_timeout, max_duration)
VALUES ($1, $2, $3, $4, make_interval(secs => $5::float8), $6, $7, $8, $9, $10, $11, $12, $13,
        coalesce($14::timestamptz, now()), make_interval(secs => $15::float8),
        make_interval(secs => $16::float8))
RETURNING id;

-- name: DeactivateRelease
UPDATE releases SET active = false WHERE id = $1 AND active;

-- name: ActivateRelease
UPDATE releases SET active = true WHERE id = $1 AND NOT active;

-- name: MarkReleaseRolledBack
-- The latest rollback away from a release; release_events keeps every one.
UPDATE releases
SET rolled_back_at = coalesce($4::timestamptz, now()), rolled_back_by = $2, rollback_reason = $3
WHERE id = $1;

-- name: InsertReleaseEvent
INSERT INTO release_events (release_id, from_release_id, action, forced, actor, reason, at)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($7::timestamptz, now()))
RETURNING id, at;

-- name: LastActivation
-- How the release last became active: the most recent event that made it so.
SELECT id, release_id, from_release_id, action, forced, actor, reason, at
FROM release_events
WHERE release_id = $1
ORDER BY at DESC, id DESC
LIMIT 1;

-- name: ListReleaseEvents
SELECT id, release_id, from_release_id, action, forced, actor, reason, at
FROM release_events
ORDER BY at DESC, id DESC
LIMIT $1;
