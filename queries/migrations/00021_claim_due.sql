-- +goose Up
-- One definition of due-ness, and a claim in fewer statements (issue 25 lever 3, issue 20 item 6).
--
-- probe_claim_state says, for one server as of a time, what a claim decides and when the server
-- becomes claimable: the rules of probe_claim_lease (00009, 00017) written once. The claim
-- (probe_claim_due), the dry run (queries/claim.sql ClaimPreview) and `servers show`
-- (ServerNextCheck) all read it, and one table of cases holds the three to it
-- (internal/history/due_test.go). It is an SQL function returning a set, stable and not strict,
-- so that PostgreSQL inlines it into each caller's query (a LATERAL subquery, no function call per
-- row). Its states, in the order they are judged:
--
--   paused | delisted  the status: never claimed as it stands (claimable_at NULL);
--   open_job           a job is open within the in-flight window: its finish schedules the next
--                      check; claimable when the window ends (the lease's end);
--   abandoned          a job is open past the window: the next round closes it as abandoned when
--                      it starts (probe_close_abandoned) and then claims the server;
--   scheduled          not due yet: claimable at next_check_at;
--   spacing            due, but a job was requested within the spacing guard (unless a
--                      maintainer asked for a re-check since the last job);
--   claimable          due: the next claim takes it.
--
-- probe_claim_due is probe_claim_lease with two statements fewer: the abandoned-job sweep moved to
-- probe_close_abandoned, which a round runs once when it starts (probe.StartRound) rather than
-- every claim, and the isolation check read in the statement that takes the shared lock. A server
-- whose job is abandoned is skipped by the claim (state abandoned) until a round's sweep closes
-- the job: its open-job row would otherwise make the claim's insert skip it, slot after slot.
--
-- Additive: probe_claim_lease and probe_claim stay as they are, for the previous binary, whose
-- claims still sweep every time (queries/claim_rolling_test.go, claim_compat_test.go).

-- +goose StatementBegin
CREATE FUNCTION probe_claim_state(
    p_server_id             bigint,
    p_status                text,
    p_next_check_at         timestamptz,
    p_maintainer_claimed_at timestamptz,
    p_now                   timestamptz,
    p_min_spacing           interval,
    p_in_flight             interval
) RETURNS TABLE (
    state             text,
    reason            text,
    claimable_at      timestamptz,
    open_job_id       bigint,
    open_requested_at timestamptz,
    spaced_since      timestamptz
)
LANGUAGE sql STABLE
AS $probe$
SELECT CASE WHEN p_status <> 'active'                              THEN p_status
            WHEN o.job_id IS NOT NULL AND o.requested_at > p_now - p_in_flight THEN 'open_job'
            WHEN o.job_id IS NOT NULL                              THEN 'abandoned'
            WHEN p_next_check_at > p_now                           THEN 'scheduled'
            WHEN r.reason = 'scheduled' AND sp.last IS NOT NULL    THEN 'spacing'
            ELSE 'claimable' END,
       r.reason,
       CASE WHEN p_status <> 'active'                              THEN NULL
            WHEN o.job_id IS NOT NULL AND o.requested_at > p_now - p_in_flight THEN o.requested_at + p_in_flight
            WHEN o.job_id IS NOT NULL                              THEN p_now
            WHEN p_next_check_at > p_now                           THEN p_next_check_at
            WHEN r.reason = 'scheduled' AND sp.last IS NOT NULL    THEN sp.last + p_min_spacing
            ELSE p_now END,
       o.job_id, o.requested_at, sp.last
  FROM (SELECT CASE WHEN p_maintainer_claimed_at IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                      WHERE m.server_id = p_server_id
                                        AND m.requested_at >= p_maintainer_claimed_at)
                    THEN 'maintainer_claim' ELSE 'scheduled' END AS reason) AS r
  -- The open job (probe_open_jobs, 00017: one per server while layer 4 stands).
  LEFT JOIN LATERAL (SELECT oj.job_id, oj.requested_at FROM probe_open_jobs AS oj
                      WHERE oj.server_id = p_server_id
                      ORDER BY oj.requested_at DESC LIMIT 1) AS o ON true
  -- Layer 3, the spacing guard: the last job requested within it (the jobs' partitions before it
  -- are not read).
  LEFT JOIN LATERAL (SELECT max(p.requested_at) AS last FROM probe_jobs AS p
                      WHERE p.server_id = p_server_id
                        AND p.requested_at > p_now - p_min_spacing) AS sp ON true
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION probe_close_abandoned(
    p_in_flight interval    DEFAULT interval '15 minutes',
    p_now       timestamptz DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_closed integer;
BEGIN
    -- Layer 4's companion, as probe_claim_lease runs it: jobs past the in-flight window are closed
    -- as abandoned; their servers' leases ended with them (next_check_at = requested_at + window
    -- <= now), so they are due again. The job rows are locked first in the order a finish takes
    -- them (by id, as probe_finish_many does), each by its partition key, so that the sweep and a
    -- batch of finishes cannot deadlock; the trigger on probe_jobs removes their open-job rows.
    PERFORM 1
       FROM probe_jobs AS j
       JOIN probe_open_jobs AS oj ON j.id = oj.job_id AND j.requested_at = oj.requested_at
      WHERE oj.requested_at <= v_now - p_in_flight
        AND j.finished_at IS NULL
      ORDER BY j.id
        FOR UPDATE OF j;
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = 'abandoned',
           error       = 'still open after the in-flight window of ' || p_in_flight::text
      FROM probe_open_jobs AS oj
     WHERE oj.requested_at <= v_now - p_in_flight
       AND j.id = oj.job_id
       AND j.requested_at = oj.requested_at
       AND j.finished_at IS NULL;
    GET DIAGNOSTICS v_closed = ROW_COUNT;
    RETURN v_closed;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION probe_claim_due(
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
-- No JIT: the planner cannot tell how many due servers the state filter passes, so a claim of a
-- few dozen servers is costed as the whole due range and crossed jit_above_cost; compiling its
-- ~200 expressions then cost more than the claim itself (tens to hundreds of ms a claim, measured
-- with pg_stat_statements' jit columns under BenchmarkThroughput). The claim is an index walk of
-- at most p_limit servers: nothing JIT could pay for (queries/audit.sql turns it off likewise).
SET jit = off
AS $probe$
DECLARE
    v_isolation text;
    v_locked    text;
    v_now       timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- One statement before any read: probe_claim's key (queries.ClaimLockKey), shared, so that a
    -- previous binary's claim or a restore, which take it exclusively, never run beside this one;
    -- and the isolation, since the lock serialises only under READ COMMITTED (a later snapshot).
    SELECT current_setting('transaction_isolation'), pg_advisory_xact_lock_shared(482956239461)::text
      INTO v_isolation, v_locked;
    IF v_isolation <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim_due must run under READ COMMITTED, not %', v_isolation
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    v_now := coalesce(p_now, clock_timestamp());

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.transport, s.next_check_at, c.reason
          FROM servers AS s
         CROSS JOIN LATERAL probe_claim_state(s.id, s.status, s.next_check_at, s.maintainer_claimed_at,
                                              v_now, p_min_spacing, p_in_flight) AS c
         -- The due range of servers_due_order_idx; probe_claim_state decides the rest (the
         -- in-flight guard, layer 3's spacing guard, the maintainer's re-check). The due servers
         -- are read in the index's order up to the limit, never all judged and sorted
         -- (queries/claim_plan_test.go holds the plan to it).
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           AND c.state = 'claimable'
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
         -- Layer 1: a row another claim holds is skipped; one it leased since this statement's
         -- snapshot is re-read when locked, and no longer passes next_check_at <= v_now.
         FOR UPDATE OF s SKIP LOCKED
    ), opened AS (
        -- Layer 4: one open job per server, held by the unique index on probe_open_jobs
        -- (server_id), as in probe_claim_lease (00017); requested_at is read from the clock
        -- during this statement, after its snapshot (see 00002_claim.sql).
        INSERT INTO probe_open_jobs AS oj (job_id, server_id, requested_at)
        SELECT nextval('probe_jobs_id_seq'), pk.id, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING oj.job_id, oj.server_id, oj.requested_at
    ), inserted AS (
        INSERT INTO probe_jobs AS j (id, server_id, round_id, invocation, reason, requested_at)
        SELECT op.job_id, pk.id, p_round_id, p_invocation, pk.reason, op.requested_at
          FROM opened AS op
          JOIN picked AS pk ON pk.id = op.server_id
         ORDER BY pk.next_check_at, pk.id
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
DROP FUNCTION probe_claim_due(bigint, integer, integer, interval, interval, timestamptz);
DROP FUNCTION probe_close_abandoned(interval, timestamptz);
DROP FUNCTION probe_claim_state(bigint, text, timestamptz, timestamptz, timestamptz, interval, interval);
