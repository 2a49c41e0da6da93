-- +goose Up
-- Fencing, replay and no test seam in the claim.
--
-- A job is a lease: its claim time plus the in-flight window. A finish for a job that is no longer
-- open (closed as abandoned, its server taken over by another round) is late: its run is still
-- stored, marked late (the fault is probectl's, not the server's), and the server's next check
-- time is never advanced by it. A finish replayed for a job whose run is already stored (a local
-- spool played back after a lost reply) stores nothing and returns without error.
--
-- probe_claim loses its p_skip_lock switch: any role allowed to claim could switch layer 1 off.
-- The 6-argument claim is the claim; a 7-argument form is kept one release for the previous binary
-- (it names p_skip_lock in its call) and raises when p_skip_lock is true. Drop it one release later.
-- Tests install their lock-less variant into their own test database.

ALTER TABLE probe_runs
    ADD COLUMN late boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN probe_runs.late IS
    'the finish came after the job was closed (abandoned, taken over): stored at probectl''s fault, the server not advanced';

DROP FUNCTION probe_claim(bigint, integer, integer, interval, interval, timestamptz, boolean);

-- +goose StatementBegin
CREATE FUNCTION probe_claim(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval    DEFAULT interval '10 minutes',
    p_in_flight   interval    DEFAULT interval '15 minutes',
    p_now         timestamptz DEFAULT NULL
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- The lock below serialises claims only under READ COMMITTED, where each statement takes a
    -- new snapshot. Under REPEATABLE READ or SERIALIZABLE the snapshot is taken by the first
    -- statement, before the lock, and a claim would read what the claim before it had not yet
    -- written: refuse rather than claim twice.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- Layer 1. The lock is taken in a statement of its own, before any statement that reads:
    -- under READ COMMITTED each statement takes a new snapshot, so the reads below see every
    -- claim committed before we got the lock. Taken inside the reading statement, the lock would
    -- come after that statement's snapshot and serialise nothing. 482956239461 is 0x70726f6265,
    -- "probe" in ASCII (queries.ClaimLockKey). There is no switch: tests that take the lock away
    -- install their own variant in their own database.
    PERFORM pg_advisory_xact_lock(482956239461);

    -- The time of the claim is read after the lock: a claim that waited is dated when it was made.
    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: a job still open after the in-flight window is closed as abandoned
    -- (its prober is presumed dead), so the server can be claimed again and the unique index
    -- never refuses a live claim.
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = 'abandoned',
           error       = 'still open after the in-flight window of ' || p_in_flight::text
     WHERE j.finished_at IS NULL
       AND j.requested_at <= v_now - p_in_flight;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                -- An explicit re-check: a maintainer claimed the server after its last job.
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job. OFFSET 0 keeps it a per-server probe of the
           -- one-open-job index (see 00002_claim.sql).
           AND NOT EXISTS (SELECT 1 FROM probe_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.finished_at IS NULL
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard: no job requested within the minimum spacing, unless this
           -- is an explicit re-check.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
    ), inserted AS (
        -- Layer 4: the unique index allows one open job per server; a conflicting claim (only
        -- possible with layer 1 taken away) skips the server instead of failing the claim.
        -- requested_at is read from the clock here, during this statement, and so after its
        -- snapshot (see 00002_claim.sql).
        INSERT INTO probe_jobs AS j (server_id, round_id, invocation, reason, requested_at)
        SELECT pk.id, p_round_id, p_invocation, pk.reason, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.next_check_at, i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- The previous binary's call: every argument named, p_skip_lock among them. No defaults, so a call
-- without p_skip_lock can only mean the claim above. Drop it one release after this one.
-- +goose StatementBegin
CREATE FUNCTION probe_claim(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval,
    p_in_flight   interval,
    p_now         timestamptz,
    p_skip_lock   boolean
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
BEGIN
    IF p_skip_lock IS DISTINCT FROM false THEN
        RAISE EXCEPTION 'probe_claim: p_skip_lock is gone; the claim always takes its lock'
              USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN QUERY
    SELECT c.job_id, c.server_id, c.slug, c.endpoint_url, c.kind, c.claimed_next_check_at, c.reason, c.requested_at
      FROM probe_claim(p_round_id    => p_round_id,
                       p_invocation  => p_invocation,
                       p_limit       => p_limit,
                       p_min_spacing => p_min_spacing,
                       p_in_flight   => p_in_flight,
                       p_now         => p_now) AS c;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_finish(
    p_job_id                bigint,
    p_claimed_next_check_at timestamptz,
    p_outcome               text,
    p_error                 text,
    p_started_at            timestamptz,
    p_check_finished_at     timestamptz,
    p_requests              integer,
    p_result                jsonb,
    p_envelope              jsonb,
    p_now                   timestamptz DEFAULT NULL
) RETURNS TABLE (
    run_id       bigint,
    advanced     boolean,
    job_finished boolean,
    finished_at  timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_server bigint;
    v_open   boolean;
BEGIN
    -- The job's row is locked: a claim closing it as abandoned waits for this finish, or this
    -- finish sees it closed.
    SELECT j.server_id, j.finished_at IS NULL INTO v_server, v_open
      FROM probe_jobs AS j WHERE j.id = p_job_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe_finish: no job %', p_job_id USING ERRCODE = 'no_data_found';
    END IF;

    -- A replay (a spool played back, a reply lost after the commit): the run is stored already.
    -- Store nothing twice, change nothing, and say so with the stored run's id.
    SELECT r.id INTO run_id FROM probe_runs AS r WHERE r.job_id = p_job_id;
    IF FOUND THEN
        advanced := false;
        job_finished := false;
        finished_at := v_now;
        RETURN NEXT;
        RETURN;
    END IF;

    -- (a) Advance, only while the job is still open (a late finish has lost its lease: another
    -- round may have claimed the server since, and only its finish may move the server on), and
    -- as a compare-and-set on the next_check_at that was claimed.
    advanced := false;
    IF v_open THEN
        UPDATE servers AS s
           SET next_check_at = v_now + s.check_interval
         WHERE s.id = v_server
           AND s.next_check_at = p_claimed_next_check_at
           AND s.status = 'active';
        advanced := FOUND;
    END IF;

    -- (b) The run: the observation was made, so it is stored whatever the guards say; late when
    -- the job was closed meanwhile (at probectl's fault, not the server's).
    INSERT INTO probe_runs AS r (job_id, server_id, started_at, finished_at, requests, result, envelope, late)
    VALUES (p_job_id, v_server, p_started_at, p_check_finished_at, p_requests, p_result, p_envelope, NOT v_open)
    RETURNING r.id INTO run_id;

    -- (c) Finish the job only if it is still open (not closed as abandoned meanwhile).
    job_finished := false;
    IF v_open THEN
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = p_outcome,
               error       = nullif(p_error, '')
         WHERE j.id = p_job_id;
        job_finished := true;
    END IF;

    finished_at := v_now;
    RETURN NEXT;
END
$probe$;
-- +goose StatementEnd

-- +goose Down
-- Back to 00002_claim.sql's claim and finish, as they shipped.
DROP FUNCTION probe_claim(bigint, integer, integer, interval, interval, timestamptz, boolean);
DROP FUNCTION probe_claim(bigint, integer, integer, interval, interval, timestamptz);
-- +goose StatementBegin
CREATE FUNCTION probe_claim(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval    DEFAULT interval '10 minutes',
    p_in_flight   interval    DEFAULT interval '15 minutes',
    p_now         timestamptz DEFAULT NULL,
    -- Tests only: switches layer 1 off to show that the other layers hold without it.
    p_skip_lock   boolean     DEFAULT false
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- The lock below serialises claims only under READ COMMITTED, where each statement takes a
    -- new snapshot. Under REPEATABLE READ or SERIALIZABLE the snapshot is taken by the first
    -- statement, before the lock, and a claim would read what the claim before it had not yet
    -- written: refuse rather than claim twice.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- Layer 1. The lock is taken in a statement of its own, before any statement that reads:
    -- under READ COMMITTED each statement takes a new snapshot, so the reads below see every
    -- claim committed before we got the lock. Taken inside the reading statement, the lock would
    -- come after that statement's snapshot and serialise nothing. 482956239461 is 0x70726f6265,
    -- "probe" in ASCII (queries.ClaimLockKey).
    IF NOT p_skip_lock THEN
        PERFORM pg_advisory_xact_lock(482956239461);
    END IF;

    -- The time of the claim is read after the lock: a claim that waited is dated when it was made.
    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: a job still open after the in-flight window is closed as abandoned
    -- (its prober is presumed dead), so the server can be claimed again and the unique index
    -- never refuses a live claim.
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = 'abandoned',
           error       = 'still open after the in-flight window of ' || p_in_flight::text
     WHERE j.finished_at IS NULL
       AND j.requested_at <= v_now - p_in_flight;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                -- An explicit re-check: a maintainer claimed the server after its last job.
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job. OFFSET 0 keeps it a per-server probe of the
           -- one-open-job index: pulled up into an anti join, a plan made on stale statistics
           -- rescans every open job for each server it skips (BenchmarkTwentyClaimersOfFive:
           -- 21 ms a claim with 2,000 open jobs, 2.8 ms with OFFSET 0).
           AND NOT EXISTS (SELECT 1 FROM probe_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.finished_at IS NULL
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard: no job requested within the minimum spacing, unless this
           -- is an explicit re-check.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
    ), inserted AS (
        -- Layer 4: the unique index allows one open job per server; a conflicting claim (only
        -- possible with layer 1 switched off) skips the server instead of failing the claim.
        -- requested_at is read from the clock here, during this statement, and so after its
        -- snapshot: a finish that committed just before the snapshot is dated before the claim
        -- that saw it, and the audit classes such a pair after_finish, not overlap.
        INSERT INTO probe_jobs AS j (server_id, round_id, invocation, reason, requested_at)
        SELECT pk.id, p_round_id, p_invocation, pk.reason, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.next_check_at, i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_finish(
    p_job_id                bigint,
    p_claimed_next_check_at timestamptz,
    p_outcome               text,
    p_error                 text,
    p_started_at            timestamptz,
    p_check_finished_at     timestamptz,
    p_requests              integer,
    p_result                jsonb,
    p_envelope              jsonb,
    p_now                   timestamptz DEFAULT NULL
) RETURNS TABLE (
    run_id       bigint,
    advanced     boolean,
    job_finished boolean,
    finished_at  timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_server bigint;
BEGIN
    SELECT j.server_id INTO v_server FROM probe_jobs AS j WHERE j.id = p_job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe_finish: no job %', p_job_id USING ERRCODE = 'no_data_found';
    END IF;

    -- (a) Advance, as a compare-and-set on the next_check_at that was claimed: a re-check, a
    -- rescue or a pause that happened meanwhile wins, and advanced says so.
    UPDATE servers AS s
       SET next_check_at = v_now + s.check_interval
     WHERE s.id = v_server
       AND s.next_check_at = p_claimed_next_check_at
       AND s.status = 'active';
    advanced := FOUND;

    -- (b) The run: the observation was made, so it is stored whatever the guards say.
    INSERT INTO probe_runs AS r (job_id, server_id, started_at, finished_at, requests, result, envelope)
    VALUES (p_job_id, v_server, p_started_at, p_check_finished_at, p_requests, p_result, p_envelope)
    RETURNING r.id INTO run_id;

    -- (c) Finish the job only if it is still open (not closed as abandoned meanwhile).
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = p_outcome,
           error       = nullif(p_error, '')
     WHERE j.id = p_job_id
       AND j.finished_at IS NULL;
    job_finished := FOUND;

    finished_at := v_now;
    RETURN NEXT;
END
$probe$;
-- +goose StatementEnd

ALTER TABLE probe_runs DROP COLUMN late;
