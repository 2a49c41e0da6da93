-- name: LockRegistrySync
-- Serialises syncs and registry imports: each decides what to add, update and delist from what it
-- read, so two at once could both insert a slug or undo each other's delisting.
SELECT pg_advisory_xact_lock(hashtext('probectl registry sync'));

-- name: RegistryServerBySlug
-- The server a registry entry's slug names, locked for the sync's update.
SELECT id, slug, endpoint_url, transport, status, registry_name, registry_url,
       registry_deprecated_at IS NOT NULL AS deprecated,
       registry_delisted_at IS NOT NULL AS registry_delisted
  FROM servers
 WHERE slug = @slug
   FOR UPDATE;

-- name: RegistryServersByName
-- The servers a registry name owns in one registry, locked for the sync's update: another
-- registry's servers of the same name, and those of a file import, are not this sync's to delist.
SELECT id, slug, endpoint_url, transport, status, registry_name, registry_url,
       registry_deprecated_at IS NOT NULL AS deprecated,
       registry_delisted_at IS NOT NULL AS registry_delisted
  FROM servers
 WHERE registry_name = @name
   AND registry_url = @registry_url
 ORDER BY slug
   FOR UPDATE;

-- name: RegistryListedServerCount
-- How many servers a registry's syncs own that are not delisted: what the sync's bound on
-- delisting is measured against.
SELECT count(*) FROM servers WHERE registry_url = @registry_url AND status <> 'delisted';

-- name: RegistryServersNotListed
-- The servers a registry's sync added whose names a full listing no longer holds and that are not
-- delisted yet: the registry removed them.
SELECT id, slug, endpoint_url, transport, status, registry_name, registry_url,
       registry_deprecated_at IS NOT NULL AS deprecated,
       registry_delisted_at IS NOT NULL AS registry_delisted
  FROM servers
 WHERE registry_url = @registry_url
   AND registry_name IS NOT NULL -- a server added by hand is never a sync's to delist
   AND status <> 'delisted'
   AND NOT (registry_name = ANY (@names::text[]))
 ORDER BY slug
   FOR UPDATE;

-- name: InsertRegistryServer
-- A new server from the registry: due at once. ON CONFLICT DO NOTHING: a slug taken since it was
-- read (by `servers add`, which does not take the sync's lock) returns no row.
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at, created_at, transport,
                     registry_name, registry_url, registry_deprecated_at)
VALUES (@slug, @url, 'mcp', @plan, @check_interval::interval,
        coalesce(@now::timestamptz, now()), coalesce(@now::timestamptz, now()), @transport,
        @name, @registry_url, CASE WHEN @deprecated::boolean THEN coalesce(@now::timestamptz, now()) END)
ON CONFLICT (slug) DO NOTHING
RETURNING id;

-- name: UpdateRegistryServer
-- The registry moved a server's remote, changed its transport or its deprecation: the row (and so
-- its id and history) stays. The registry name must still be the server's own: the guard that a
-- sync never changes a server of another name holds in this statement too, and so does the one
-- that a server another registry syncs is never changed by this one (a sync may adopt a server a
-- file import added; a file import, NULL @registry_url, only changes such servers). The plan, the
-- status and the next check time stay the operator's.
UPDATE servers
   SET endpoint_url = @url,
       transport = @transport,
       registry_url = coalesce(@registry_url, registry_url),
       registry_deprecated_at = CASE WHEN @deprecated::boolean
                                     THEN coalesce(registry_deprecated_at, coalesce(@now::timestamptz, now())) END
 WHERE id = @id
   AND registry_name = @name
   AND (registry_url IS NULL OR registry_url = @registry_url::text)
RETURNING id;

-- name: MarkRegistryDelisted
-- Set when a sync delists a server (the status change itself is recorded by ChangeServerStatus),
-- cleared when a sync lists it again.
UPDATE servers
   SET registry_delisted_at = CASE WHEN @delisted::boolean THEN coalesce(@now::timestamptz, now()) END
 WHERE id = @id;

-- name: RegistrySyncClock
-- A sync's start: the given time, or the database's (the clock registry_syncs is kept on).
SELECT coalesce(@now::timestamptz, clock_timestamp()) AS now;

-- name: RegistrySyncState
SELECT registry_url, newest_updated_at, every, scheduled_by, scheduled_at, started_at, finished_at,
       full_sync, pages, added, updated, delisted, unchanged, errors, last_error, last_error_at
  FROM registry_syncs
 WHERE (@registry_url::text IS NULL OR registry_url = @registry_url)
 ORDER BY registry_url;

-- name: RecordRegistrySync
-- A sync applied its changes: where the next incremental one starts, and what this one did.
INSERT INTO registry_syncs (registry_url, newest_updated_at, started_at, finished_at, full_sync, pages,
                            added, updated, delisted, unchanged, errors, last_error, last_error_at)
VALUES (@registry_url, CASE WHEN @newest_updated_at::timestamptz IS NOT NULL
                            THEN least(@newest_updated_at::timestamptz, @started_at::timestamptz) END, @started_at,
        coalesce(@now::timestamptz, now()), @full_sync, @pages,
        @added, @updated, @delisted, @unchanged, 0, NULL, NULL)
ON CONFLICT (registry_url) DO UPDATE
   -- Never later than this sync's start (the database's clock): an entry the registry dated in
   -- the future, now or by an earlier binary, must not stop every later incremental sync.
   -- (least() and greatest() skip a NULL: none seen stays none.)
   SET newest_updated_at = greatest(CASE WHEN registry_syncs.newest_updated_at IS NOT NULL
                                         THEN least(registry_syncs.newest_updated_at, @started_at::timestamptz) END,
                                    EXCLUDED.newest_updated_at),
       started_at = EXCLUDED.started_at,
       finished_at = EXCLUDED.finished_at,
       full_sync = EXCLUDED.full_sync,
       pages = EXCLUDED.pages,
       added = EXCLUDED.added,
       updated = EXCLUDED.updated,
       delisted = EXCLUDED.delisted,
       unchanged = EXCLUDED.unchanged,
       errors = 0,
       last_error = NULL,
       last_error_at = NULL;

-- name: RecordRegistrySyncFailure
-- A sync that applied nothing: the error and how many syncs in a row failed.
INSERT INTO registry_syncs (registry_url, started_at, errors, last_error, last_error_at)
VALUES (@registry_url, @started_at, 1, left(@last_error, 2000), coalesce(@now::timestamptz, now()))
ON CONFLICT (registry_url) DO UPDATE
   SET started_at = EXCLUDED.started_at,
       errors = registry_syncs.errors + 1,
       last_error = EXCLUDED.last_error,
       last_error_at = EXCLUDED.last_error_at;

-- name: ScheduleRegistrySync
-- `servers sync --every`: NULL every removes the schedule.
INSERT INTO registry_syncs (registry_url, every, scheduled_by, scheduled_at)
VALUES (@registry_url, @every::interval, @scheduled_by, coalesce(@now::timestamptz, now()))
ON CONFLICT (registry_url) DO UPDATE
   SET every = EXCLUDED.every,
       scheduled_by = EXCLUDED.scheduled_by,
       scheduled_at = EXCLUDED.scheduled_at;

-- name: DueRegistrySyncs
-- The scheduled registries whose last sync (applied or failed) started at least their interval
-- ago, or never ran.
SELECT registry_url
  FROM registry_syncs
 WHERE every IS NOT NULL
   AND (started_at IS NULL OR started_at <= coalesce(@now::timestamptz, now()) - every)
 ORDER BY registry_url;

-- name: ClaimDueRegistrySync
-- Takes one due registry for a scheduled sync by moving its start to now, so no other worker's
-- job takes it again until its interval has passed (the sync records the same start when done).
UPDATE registry_syncs
   SET started_at = coalesce(@now::timestamptz, now())
 WHERE registry_url = (SELECT registry_url
                         FROM registry_syncs
                        WHERE every IS NOT NULL
                          AND (started_at IS NULL OR started_at <= coalesce(@now::timestamptz, now()) - every)
                        ORDER BY started_at NULLS FIRST, registry_url
                        LIMIT 1
                          FOR UPDATE SKIP LOCKED)
RETURNING registry_url, started_at;
