-- +goose Up
-- The claim and the finish, the two write paths the invariant is about:
--
--   At no moment is a server both due and without an open job.
--
-- probe_claim holds layers 1 (the advisory lock, in its own statement before the read), 3 (the
-- spacing guard) and 4 (it closes jobs past the in-flight window so that the unique index
-- probe_jobs_one_open_per_server never refuses a live claim). probe_finish is layer 2: it advances
-- next_check_at, stores the run and finishes the job in one transaction.
--
-- Function bodies are quoted with the tag $probe$: the drift check compares pg_proc.prosrc with
-- the text between the tags in these files (queries.ShippedFunctionBodies).

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
CREATE FUNCTION probe_finish(
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

-- +goose Down
DROP FUNCTION probe_finish(bigint, timestamptz, text, text, timestamptz, timestamptz, integer, jsonb, jsonb, timestamptz);
DROP FUNCTION probe_claim(bigint, integer, integer, interval, interval, timestamptz, boolean);
