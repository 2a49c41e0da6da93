-- +goose Up
-- What a failover of the database leaves behind, so that it can be repaired and explained.
--
-- probe_restored_jobs: a result that a spool or a failover journal kept, whose claim the database
-- no longer holds (an asynchronous standby was promoted before the claim reached it; the new
-- primary may then hand the same job id to another claim). It is stored under a job of its own,
-- finished, and marked here with the claim it answered, so that a second replay of the same
-- result finds it and writes nothing (the unique key), and a reader can tell it from a check.
--
-- probectl_timelines: the PostgreSQL timelines probectl processes have seen the database on. A
-- promotion starts a new timeline; the process that first sees it writes a row, and `audit
-- duplicates` names a pair of checks that straddle the switch `failover`.
--
-- Both tables are new and nothing else refers to them; a restored job is an ordinary finished job
-- (round NULL), so a previous binary, which neither reads nor writes these tables, keeps working.

CREATE TABLE probe_restored_jobs (
    job_id                bigint      PRIMARY KEY REFERENCES probe_jobs (id),
    server_id             bigint      NOT NULL REFERENCES servers (id),
    original_job_id       bigint      NOT NULL,
    original_round_id     bigint,
    original_requested_at timestamptz NOT NULL,
    source                text        NOT NULL CHECK (source IN ('spool', 'journal')),
    restored_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT probe_restored_jobs_original_key UNIQUE (server_id, original_job_id, original_requested_at)
);

CREATE TABLE probectl_timelines (
    timeline_id          bigint      PRIMARY KEY CHECK (timeline_id > 0),
    previous_timeline_id bigint,
    first_seen_at        timestamptz NOT NULL DEFAULT now(),
    seen_by              text        NOT NULL -- host-pid of the process that saw it first
);

-- +goose Down
DROP TABLE probectl_timelines;
DROP TABLE probe_restored_jobs;
