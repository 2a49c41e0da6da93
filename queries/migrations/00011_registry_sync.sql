-- +goose Up
-- The directory follows the MCP registry (`probectl servers sync`, docs/registry.md). A server
-- imported from the registry records the registry name it came from, so that two names that map
-- to one slug (io.github.acme/weather-x and io.github.acme-weather/x) are refused instead of one
-- silently taking over the other's server; NULL means the server was added by hand (or before
-- this migration), and a sync never touches it. registry_url is the registry a sync last read it
-- from (NULL: a file import). registry_deprecated_at marks an entry the registry deprecated (it is
-- kept and checked); registry_delisted_at says a sync delisted the server (the who and why are in
-- server_status_changes), so a sync that sees the entry listed again may list it again, while a
-- server an operator delisted stays delisted. Every column is new and nullable, so a previous
-- binary, which neither reads nor writes them, keeps working.

ALTER TABLE servers
    ADD COLUMN registry_name text
        CONSTRAINT servers_registry_name_length CHECK (length(registry_name) BETWEEN 1 AND 500),
    ADD COLUMN registry_url text
        CONSTRAINT servers_registry_url_length CHECK (length(registry_url) BETWEEN 1 AND 2048),
    ADD COLUMN registry_deprecated_at timestamptz,
    ADD COLUMN registry_delisted_at timestamptz;

CREATE INDEX servers_registry_name ON servers (registry_name) WHERE registry_name IS NOT NULL;

-- One row per registry a sync reads: where the next incremental sync starts (the newest
-- updatedAt seen), what the last sync did, and the schedule `probectl worker` runs it on (NULL:
-- by hand only). The table is new, so a previous binary is unaffected.
CREATE TABLE registry_syncs (
    registry_url      text PRIMARY KEY CHECK (length(registry_url) BETWEEN 1 AND 2048),
    newest_updated_at timestamptz,
    every             interval
        CONSTRAINT registry_syncs_every_bounds
        CHECK (every IS NULL OR every BETWEEN interval '5 minutes' AND interval '7 days'),
    scheduled_by      text,
    scheduled_at      timestamptz,
    started_at        timestamptz,                -- the last sync's start, failed or not
    finished_at       timestamptz,                -- the last sync that applied its changes
    full_sync         boolean NOT NULL DEFAULT false,
    pages             integer NOT NULL DEFAULT 0 CHECK (pages >= 0),
    added             integer NOT NULL DEFAULT 0 CHECK (added >= 0),
    updated           integer NOT NULL DEFAULT 0 CHECK (updated >= 0),
    delisted          integer NOT NULL DEFAULT 0 CHECK (delisted >= 0),
    unchanged         integer NOT NULL DEFAULT 0 CHECK (unchanged >= 0),
    errors            integer NOT NULL DEFAULT 0 CHECK (errors >= 0), -- failed syncs since the last one that applied
    last_error        text CHECK (length(last_error) <= 2000),
    last_error_at     timestamptz
);

-- +goose Down
DROP TABLE registry_syncs;
DROP INDEX servers_registry_name;
ALTER TABLE servers
    DROP COLUMN registry_delisted_at,
    DROP COLUMN registry_deprecated_at,
    DROP COLUMN registry_url,
    DROP COLUMN registry_name;
