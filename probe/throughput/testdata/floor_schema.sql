-- The floor's tables: the rows a check writes (its job, its run, its server leased and advanced,
-- its job closed), with the keys and indexes probectl's own tables are read by, and nothing else:
-- no partitions, foreign keys, triggers, open-job queue, rollups or alert state. Filled with the
-- servers reset.sql made due.
DROP TABLE IF EXISTS floor_runs, floor_jobs, floor_servers;
CREATE TABLE floor_servers (
    id             bigint PRIMARY KEY,
    slug           text        NOT NULL,
    endpoint_url   text        NOT NULL,
    kind           text        NOT NULL,
    check_interval interval    NOT NULL,
    next_check_at  timestamptz NOT NULL
);
CREATE INDEX floor_servers_due_idx ON floor_servers (next_check_at, id);
CREATE TABLE floor_jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id    bigint      NOT NULL,
    requested_at timestamptz NOT NULL,
    finished_at  timestamptz,
    outcome      text
);
CREATE INDEX floor_jobs_server_idx ON floor_jobs (server_id, requested_at);
CREATE TABLE floor_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint      NOT NULL,
    server_id   bigint      NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    result      jsonb       NOT NULL,
    envelope    jsonb
);
CREATE INDEX floor_runs_server_idx ON floor_runs (server_id, started_at);
CREATE INDEX floor_runs_job_idx ON floor_runs (job_id);
INSERT INTO floor_servers (id, slug, endpoint_url, kind, check_interval, next_check_at)
SELECT s.id, s.slug, s.endpoint_url, s.kind, s.check_interval, s.next_check_at FROM servers AS s;
ANALYZE floor_servers;
