-- +goose Up
-- The bytes of tool definitions each server's checks stored, per day (UTC): a hostile server can
-- serve new definitions at every check, and a day's budget per server (probe: MaxToolTextPerDay)
-- bounds what it can make the directory store. Definitions past it are not stored; the run says
-- how many (its result's tool_definitions_cut) and keeps their fingerprints.
--
-- The table is new and nothing else refers to it, so a previous binary, which neither reads nor
-- writes it (its StoreTools stores without a budget), keeps working. Rows older than yesterday are
-- removed by the next store for their server.
CREATE TABLE tool_definition_bytes (
    server_id bigint NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
    day       date   NOT NULL,
    bytes     bigint NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (server_id, day)
);

-- +goose Down
DROP TABLE tool_definition_bytes;
