-- +goose Up
-- What a rollback needs to know and what it must leave behind. A release row says which release
-- to go back to (previous_id) and, for a fan-out-off rollback, which release it was derived from;
-- release_events keeps every activation (deploy or rollback), by whom and why, so the history
-- survives a release being rolled back, reactivated and rolled back again. Rollbacks write only
-- these two tables.
--
-- A release also ships the two settings the lease check needs (the per-request timeout and the
-- round's time budget), so that deploy verify checks the release's own worst case against the
-- in-flight window.

ALTER TABLE releases
    ADD COLUMN request_timeout interval NOT NULL DEFAULT interval '10 seconds'
                                        CHECK (request_timeout > interval '0'),
    ADD COLUMN max_duration    interval NOT NULL DEFAULT interval '4 minutes'
                                        CHECK (max_duration > interval '0'),
    ADD COLUMN kind         text   NOT NULL DEFAULT 'deploy' CHECK (kind IN ('deploy', 'fanout-off')),
    ADD COLUMN previous_id  bigint REFERENCES releases (id),
    ADD COLUMN derived_from bigint REFERENCES releases (id),
    ADD CONSTRAINT releases_fanout_off_is_derived CHECK ((kind = 'fanout-off') = (derived_from IS NOT NULL));

CREATE TABLE release_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- the release that became active
    release_id      bigint      NOT NULL REFERENCES releases (id),
    -- the release that was active until then (NULL for the first release)
    from_release_id bigint      REFERENCES releases (id),
    action          text        NOT NULL CHECK (action IN ('deploy', 'to-previous', 'fanout-off')),
    -- a rollback the active release's plan did not approve
    forced          boolean     NOT NULL DEFAULT false,
    actor           text        NOT NULL,
    reason          text        NOT NULL DEFAULT '',
    at              timestamptz NOT NULL DEFAULT now(),
    CHECK (NOT forced OR (action <> 'deploy' AND reason <> ''))
);

-- deploy verify and rollback look up how a release last became active.
CREATE INDEX release_events_release_idx ON release_events (release_id, at);

-- +goose Down
DROP TABLE release_events;
ALTER TABLE releases
    DROP CONSTRAINT releases_fanout_off_is_derived,
    DROP COLUMN derived_from,
    DROP COLUMN previous_id,
    DROP COLUMN kind,
    DROP COLUMN max_duration,
    DROP COLUMN request_timeout;
