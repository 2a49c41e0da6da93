-- Releases and their history. Every write here runs inside one transaction that first takes
-- LockReleases; rollbacks write only releases and release_events.

-- name: LockReleases
-- Serialises every change of the active release (deploy record, rollback). Taken in its own
-- statement before anything is read: a later statement under READ COMMITTED then sees whatever
-- the previous holder committed. The two-key form keeps clear of other advisory locks.
SELECT pg_advisory_xact_lock(2024061500, 3);

-- name: Releases
-- Every read of releases, so the columns are listed once: the release with id $1 (NULL: any),
-- only the active one when $2, newest first, at most $3.
-- contact is NULL on a release recorded before it existed (migrations/00018): "" is the default.
SELECT id, version, fanout, claim_limit, concurrency, min_spacing, finish_mode, ways_back, note,
       deployed_at, deployed_by, active, kind, previous_id, derived_from, rolled_back_at,
       rolled_back_by, rollback_reason, request_timeout, max_duration, coalesce(contact, '') AS contact
FROM releases
WHERE ($1::bigint IS NULL OR id = $1) AND (NOT $2::bool OR active)
ORDER BY id DESC
LIMIT $3;

-- name: LockActiveRelease
-- Locks the active release's row until the transaction ends and says which it is; Releases then
-- reads it by id. A writer that waited here for the row finds no row when the holder made it
-- inactive (READ COMMITTED rechecks the WHERE on the row's new version).
SELECT id FROM releases WHERE active FOR UPDATE;

-- name: InsertRelease
-- The carried settings are named as their columns (settings.Carried's db tags); @now stands in for
-- now() in tests.
INSERT INTO releases (version, fanout, claim_limit, concurrency, min_spacing, finish_mode, ways_back,
                      note, deployed_by, kind, previous_id, derived_from, active, deployed_at,
                      request_timeout, max_duration, contact)
VALUES (@version, @fanout, @claim_limit, @concurrency, @min_spacing::interval, @finish_mode, @ways_back,
        @note, @deployed_by, @kind, @previous_id, @derived_from, @active, coalesce(@now::timestamptz, now()),
        @request_timeout::interval, @max_duration::interval, nullif(@contact, ''))
RETURNING id;

-- name: DeactivateRelease
UPDATE releases SET active = false WHERE id = $1 AND active;

-- name: ActivateRelease
UPDATE releases SET active = true WHERE id = $1 AND NOT active;

-- name: MarkReleaseRolledBack
-- The latest rollback away from a release; release_events keeps every one.
UPDATE releases
SET rolled_back_at = coalesce(@now::timestamptz, now()), rolled_back_by = @by, rollback_reason = @reason
WHERE id = @id;

-- name: InsertReleaseEvent
INSERT INTO release_events (release_id, from_release_id, action, forced, actor, reason, at)
VALUES (@release_id, @from_release_id, @action, @forced, @actor, @reason, coalesce(@now::timestamptz, now()))
RETURNING id, release_id, from_release_id, action, forced, actor, reason, at;

-- name: ReleaseEvents
-- Activations, newest first: of release $1 (NULL: of every release), at most $2. LastActivation
-- is the first one of a release: how it last became active.
SELECT id, release_id, from_release_id, action, forced, actor, reason, at
FROM release_events
WHERE ($1::bigint IS NULL OR release_id = $1)
ORDER BY at DESC, id DESC
LIMIT $2;

-- name: ReleaseSequences
-- Where the sequences of releases.id and release_events.id stand (NULL: never used), read by a
-- dry run of deploy record before it inserts, under LockReleases.
SELECT pg_sequence_last_value(pg_get_serial_sequence('releases', 'id')::regclass)       AS releases,
       pg_sequence_last_value(pg_get_serial_sequence('release_events', 'id')::regclass) AS events;

-- name: RestoreReleaseSequences
-- A dry run of deploy record puts the sequences back where ReleaseSequences found them ($1, $2):
-- its transaction rolls back, but a sequence does not, and the release a real record makes next
-- would have skipped the number the dry run showed. Safe under LockReleases, which every writer
-- of releases and release_events holds.
SELECT setval(v.seq, coalesce(v.last, s.seqstart), v.last IS NOT NULL) AS restored
  FROM (VALUES (pg_get_serial_sequence('releases', 'id')::regclass, $1::bigint),
               (pg_get_serial_sequence('release_events', 'id')::regclass, $2::bigint)) AS v(seq, last)
  JOIN pg_sequence AS s ON s.seqrelid = v.seq;
