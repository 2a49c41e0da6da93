-- +goose Up
-- MCP checks as they are (see README, "MCP checks"): a server's transport, and the tool
-- definitions its checks saw, stored once per fingerprint.
--
-- servers.transport is NULL for http servers and for mcp servers added by a binary that predates
-- this column; a NULL mcp transport is read as 'streamable-http', the default (queries.Transport),
-- so the previous binary keeps inserting and claiming servers unchanged (it never names the
-- column).
ALTER TABLE servers
    ADD COLUMN transport text CHECK (transport IN ('streamable-http', 'sse'));

-- One row per distinct tool definition ever seen: the SHA-256 (hex) of its RFC 8785 canonical
-- JSON, and that JSON. Runs keep only names and fingerprints; the text lives here, once.
CREATE TABLE tool_definitions (
    fingerprint   text        PRIMARY KEY CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    definition    jsonb       NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now()
);

-- One row per distinct tool list: its fingerprint and [{"name", "fingerprint"}] sorted by name.
CREATE TABLE tool_lists (
    fingerprint   text        PRIMARY KEY CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    tools         jsonb       NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE tool_lists;
DROP TABLE tool_definitions;
ALTER TABLE servers DROP COLUMN transport;
