-- +goose Up
-- What the history views need (runs list, servers show, the /servers pages): who changed a
-- server's status and why, and indexes on the runs as those views read them. Additive only: the
-- previous binary never reads server_status_changes, and its claim already skips every server
-- whose status is not 'active'.

CREATE TABLE server_status_changes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id   bigint      NOT NULL REFERENCES servers (id),
    status_from text        NOT NULL,
    status_to   text        NOT NULL CHECK (status_to IN ('active', 'paused', 'delisted')),
    reason      text        NOT NULL CHECK (reason <> ''),
    changed_by  text        NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

-- servers show reads a server's latest change.
CREATE INDEX server_status_changes_server_idx ON server_status_changes (server_id, changed_at);

-- runs list with no --server reads the newest runs first.
CREATE INDEX probe_runs_started_idx ON probe_runs (started_at, id);

-- A run as every history view reads it: its own outcome (from the result: a late run's job says
-- abandoned, the run says what the server did), the first signature's key id (NULL: unsigned),
-- and whether the run is at probectl's own fault (interrupted by probectl, fenced or stored late
-- after its job was closed as abandoned): such runs say nothing about the server and are left out
-- of its uptime.
CREATE VIEW run_facts AS
SELECT r.id, r.job_id, j.round_id, r.server_id, s.slug AS server, s.kind,
       coalesce(r.result->>'outcome', j.outcome, '') AS outcome,
       coalesce(r.result->>'summary', '') AS summary,
       nullif(r.result->>'error', '') AS error,
       r.requests, r.started_at, r.finished_at,
       r.envelope->'signatures'->0->>'keyid' AS key_id,
       (r.result->>'fault' IS NOT DISTINCT FROM 'probectl'
        OR r.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
        OR j.outcome IS NOT DISTINCT FROM 'abandoned') AS probectl_fault
  FROM probe_runs AS r
  JOIN probe_jobs AS j ON j.id = r.job_id
  JOIN servers AS s ON s.id = r.server_id;

-- +goose Down
DROP VIEW run_facts;
DROP INDEX probe_runs_started_idx;
DROP TABLE server_status_changes;
