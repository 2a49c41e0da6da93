-- +goose Up
-- The heartbeat of `probectl worker` processes (probe/worker), so that `status` and the status
-- page, on any machine, can show the workers: whether each is alive, what it runs and what waits
-- in its local spool, which no other machine can see. River's own tables say which worker leads
-- (river_leader) and what is queued (river_job); they hold no version, host or spool, so this
-- table holds those. A worker writes its row every 10 s and removes rows a day stale. The table is
-- new and nothing else refers to it, so a previous binary, which neither reads nor writes it, keeps
-- working.

CREATE TABLE probectl_workers (
    id                  text PRIMARY KEY,          -- River's client id: host-pid
    host                text NOT NULL,
    pid                 integer NOT NULL,
    version             text NOT NULL,
    max_workers         integer NOT NULL CHECK (max_workers > 0),
    started_at          timestamptz NOT NULL DEFAULT now(),
    heartbeat_at        timestamptz NOT NULL DEFAULT now(),
    stopped_at          timestamptz,               -- set by a clean stop (SIGTERM)
    invocations_running integer NOT NULL DEFAULT 0 CHECK (invocations_running >= 0),
    spool_files         integer NOT NULL DEFAULT 0 CHECK (spool_files >= 0),
    spool_results       integer NOT NULL DEFAULT 0 CHECK (spool_results >= 0)
);

-- +goose Down
DROP TABLE probectl_workers;
