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
-- probectl_replay_lag(): how far the data a session reads is behind its primary: 0 on a primary
-- and on a standby that has replayed all it received, else the age of the last transaction it
-- replayed. Reads on a standby judge staleness (a round's heartbeat, a job's age) as of now()
-- less it, so that lag does not make a live round look dead.
--
-- The tables are new and nothing else refers to them; a restored job is an ordinary finished job
-- (round NULL); the function is new. A previous binary, which uses none of them, keeps working.

CREATE TABLE probe_restored_jobs (
    -- The restored job's id. No foreign key: probe_jobs is partitioned by time (00017), where a
    -- key must name the partition; a restored job is never deleted but with its partition.
    job_id                bigint      PRIMARY KEY,
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

-- +goose StatementBegin
CREATE FUNCTION probectl_replay_lag() RETURNS interval
LANGUAGE sql STABLE PARALLEL SAFE AS $probe$
    SELECT CASE
           WHEN NOT pg_is_in_recovery() THEN interval '0'
           WHEN pg_last_wal_receive_lsn() IS NOT NULL
                AND pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN interval '0'
           ELSE greatest(interval '0', now() - coalesce(pg_last_xact_replay_timestamp(), now()))
           END
$probe$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION probectl_replay_lag();
DROP TABLE probectl_timelines;
DROP TABLE probe_restored_jobs;
