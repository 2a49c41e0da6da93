-- +goose Up
-- A claim whose cost follows the servers it claims, not the servers in flight (docs/scale.md).
--
-- probe_claim_lease is probe_claim (migrations/00004_fencing.sql) plus a lease on the server: it
-- moves each claimed server's next_check_at to its job's lease end (requested_at + the in-flight
-- window), in the claim's own statement. A server in flight so leaves the due range at once, and
-- the next claim no longer walks past it in the due index. It is moved to the lease's end and
-- never to the next interval: if the prober dies, the job is closed as abandoned when the window
-- ends, and the server is due again at that very moment. The finish (probe_finish, AdvanceServer)
-- then sets the real next time, as a compare-and-set on the lease's end, which the claim returns
-- as claimed_next_check_at; due_at is the next_check_at the server had when it was claimed.
--
-- Layer 1 changes form: claims of this binary no longer queue on one lock. Each locks the server
-- rows it picks (FOR UPDATE SKIP LOCKED) and moves them out of the due range in the same
-- statement, so a concurrent claim either skips a row that is locked, or, if the lease committed
-- after its snapshot, re-reads the row when it locks it and finds it no longer due. That is the
-- form docs/invariant.md measured to hold (SKIP LOCKED that also moves the server's row); SKIP LOCKED
-- alone, without the move, did not. probe_claim_lease takes probe_claim's advisory lock too, in
-- SHARED mode and in a statement of its own: leasing claims do not wait for one another, but a
-- previous binary's probe_claim (which takes it exclusively, and does not lock rows) never runs
-- beside one.
--
-- The other guards stay: the open-job and spacing guards (a previous binary's claims do not move
-- next_check_at, so its servers in flight are still due and only the open-job guard keeps them
-- out), the unique index on open jobs.
--
-- Additive: probe_claim and probe_finish stay as they were, for the previous binary, whose rounds
-- may run beside this one's during a rolling deploy (queries/claim_compat_test.go).

-- The claim's order, (next_check_at, id), read from an index without a sort: the servers of one
-- import share one next_check_at, and servers_due_idx alone made every claim sort all of them.
CREATE INDEX servers_due_order_idx ON servers (next_check_at, id) WHERE status = 'active';

-- +goose StatementBegin
CREATE FUNCTION probe_claim_lease(
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
    transport             text,
    due_at                timestamptz,
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

    -- As in probe_claim: the lock serialises claims only under READ COMMITTED.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim_lease must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- probe_claim's key (queries.ClaimLockKey), shared, in a statement of its own before any read:
    -- a previous binary's claim, which takes it exclusively, never runs beside this one.
    PERFORM pg_advisory_xact_lock_shared(482956239461);

    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: jobs past the in-flight window are closed as abandoned. Their servers'
    -- leases end with them: next_check_at = requested_at + window <= now, so they are due again.
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = 'abandoned',
           error       = 'still open after the in-flight window of ' || p_in_flight::text
     WHERE j.finished_at IS NULL
       AND j.requested_at <= v_now - p_in_flight;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.transport, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job (a previous binary's claim leaves its server due).
           AND NOT EXISTS (SELECT 1 FROM probe_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.finished_at IS NULL
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
         -- Layer 1: a row another claim holds is skipped; one it leased since this statement's
         -- snapshot is re-read when locked, and no longer passes next_check_at <= v_now.
         FOR UPDATE OF s SKIP LOCKED
    ), inserted AS (
        -- Layer 4: one open job per server; requested_at read from the clock during this
        -- statement, after its snapshot (see 00002_claim.sql).
        INSERT INTO probe_jobs AS j (server_id, round_id, invocation, reason, requested_at)
        SELECT pk.id, p_round_id, p_invocation, pk.reason, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    ), leased AS (
        -- The lease: the server leaves the due range until its job's window ends.
        UPDATE servers AS s
           SET next_check_at = i.requested_at + p_in_flight
          FROM inserted AS i
         WHERE s.id = i.server_id
        RETURNING s.id, s.next_check_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.transport, pk.next_check_at, l.next_check_at,
           i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
      JOIN leased AS l ON l.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION probe_claim_lease(bigint, integer, integer, interval, interval, timestamptz);
DROP INDEX servers_due_order_idx;
