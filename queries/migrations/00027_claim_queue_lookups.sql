-- +goose Up
-- The claim's reads of the open-job queue are key lookups, whatever its statistics say (issue 25:
-- a cheaper claim).
--
-- The claim runs on a plan kept for its session (00025), made by the session's first claim. At a
-- round's start that claim meets probe_open_jobs, a queue that empties between rounds, empty or
-- nearly, and often analysed so (the autovacuum analyses it after a round's churn). The planner
-- then weighs two walks of the whole queue as cheap as looking each server up by its key, and the
-- session kept them while the round filled the queue:
--
--   - the walk's open-job check (NOT EXISTS): the queue read once behind a Materialize and
--     filtered per server;
--   - probe_claim_state's newest open job (ORDER BY requested_at DESC LIMIT 1):
--     probe_open_jobs_requested_idx read backward, filtered by server.
--
-- Each server judged then read every open job, twice: one session's 588 claims of 17 over 10,000
-- servers, alone, took 9.2 s in one run (15.7 ms each on average; 1.0 s with key lookups), and
-- grew from 4 to 52 ms each as the round went on in another; under BenchmarkThroughput auto_explain showed ~6,800 rows read per server
-- judged. 00025's enable_seqscan = off had only moved those walks from Seq Scans to Index Scans
-- without conditions, which its test (no Seq Scan) let pass.
--
-- Now the check is a scalar subquery per server (PostgreSQL never makes one a join, so, while
-- layer 4's unique index on probe_open_jobs (server_id) stands, it is an index probe of the
-- server's key, the only plan that reads no more), and the newest open job is
-- sorted above a subquery that only looks the server up (OFFSET 0: the planner cannot push the
-- order into it, so no index walk in requested_at order is weighed). Same answers: a server with
-- an open job is passed over; one open job per server while layer 4 stands, the newest of them
-- when a test switches it off. queries/claim_generic_test.go: a claim planned while the queue was
-- analysed empty reads at most two rows of it per server judged once 15,000 jobs are open (15,025
-- a claim before).
--
-- Left: the spacing lookup (the newest job of the server in probe_jobs) has the same weakness for
-- a jobs partition analysed while empty (an ANALYZE of the whole database just after midnight):
-- then the day's requested_at index costs the same as (server_id, requested_at) and may be kept
-- for the session. A partition made ahead is never analysed until it has rows, so the autovacuum
-- alone does not bring it about. Planning each pass for its values (force_custom_plan) avoids it
-- but measured slower under BenchmarkThroughput with a GET (1,482 and 1,618 servers/s against
-- 2,414 and 2,000 for the generic plans in alternate runs; no-op 2,457 and 2,638 against 3,648 and
-- 1,844, no faster) and alone (3.2 ms a claim against 1.7): planning 20 claims at once on 2 cores.
--
-- Rollback-safe: both functions keep their signatures and answers (the previous binary's claim is
-- probe_claim_due too, and its dry run and servers show read probe_claim_state), and the claim
-- keeps 00025's settings. Down puts 00024's bodies back, with 00025's settings.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim_state(
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
                                        AND m.requested_at >= p_maintainer_claimed_at
                                        -- the future's partitions pruned (see the spacing guard's)
                                        AND m.requested_at <= p_now + interval '1 day')
                    THEN 'maintainer_claim' ELSE 'scheduled' END AS reason) AS r
  -- The open job (probe_open_jobs, 00017: one per server while layer 4 stands).
  -- The key lookup in its own subquery (OFFSET 0): asked for the newest by requested_at, the planner
  -- may walk probe_open_jobs_requested_idx backward, filtered by server, when its statistics say the
  -- queue is near empty, and keep that walk in a plan it keeps for the session (00027).
  LEFT JOIN LATERAL (SELECT f.job_id, f.requested_at
                       FROM (SELECT oj.job_id, oj.requested_at FROM probe_open_jobs AS oj
                              WHERE oj.server_id = p_server_id OFFSET 0) AS f
                      ORDER BY f.requested_at DESC LIMIT 1) AS o ON true
  -- Layer 3, the spacing guard: the last job requested within it. Bounded on both sides so that
  -- only the jobs' partitions holding that range are read: the ones before it, and the ones made
  -- ahead for the coming days (00017), are pruned. The upper bound is a day past p_now, not p_now:
  -- a claim requests its jobs by the database's clock (or the p_now it was given), and a caller's
  -- p_now (the dry run's, servers show's) may lag that clock by seconds, so a job requested just
  -- "after" p_now still counts; nothing requests a job a day ahead of the clock.
  LEFT JOIN LATERAL (SELECT max(p.requested_at) AS last FROM probe_jobs AS p
                      WHERE p.server_id = p_server_id
                        AND p.requested_at > p_now - p_min_spacing
                        AND p.requested_at <= p_now + interval '1 day') AS sp ON true
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim_due(
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
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $probe$
DECLARE
    v_isolation text;
    v_locked    text;
    v_now       timestamptz;
    v_asked     integer;
    v_got       integer;
    -- where the walk of the due range resumes: after this key (next_check_at, id), which no
    -- server's key precedes at first
    v_after_at  timestamptz := '-infinity';
    v_after_id  bigint      := -9223372036854775808;
    -- the answers, a column each, in claim order
    a_job       bigint[]      := '{}';
    a_server    bigint[]      := '{}';
    a_slug      text[]        := '{}';
    a_url       text[]        := '{}';
    a_kind      text[]        := '{}';
    a_transport text[]        := '{}';
    a_due       timestamptz[] := '{}';
    a_lease     timestamptz[] := '{}';
    a_reason    text[]        := '{}';
    a_requested timestamptz[] := '{}';
    -- one pass's answers
    n_job       bigint[];
    n_server    bigint[];
    n_slug      text[];
    n_url       text[];
    n_kind      text[];
    n_transport text[];
    n_due       timestamptz[];
    n_lease     timestamptz[];
    n_reason    text[];
    n_requested timestamptz[];
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

    -- Lock first, judge after. Each pass is one statement: it locks the next due servers in the
    -- index's order, as many as the claim still lacks, SKIP LOCKED; judges only those
    -- (probe_claim_state: the in-flight guard, layer 3's spacing guard, the maintainer's
    -- re-check); and opens the jobs of the claimable ones and leases them. A server another claim
    -- holds is skipped unjudged. A pass that locked fewer servers than it asked for reached the
    -- end of the due range (skipped servers do not count against its limit), so the walk stops
    -- there, or when the claim has its limit. Each pass walks past every server it locked, so the
    -- walk ends, and the servers judged are the servers locked. The common case is one pass.
    --
    -- Servers judged not claimable stay locked until the claim commits, as the ones it leased do:
    -- another claim skips them meanwhile (it would not have taken them either), and a finish or a
    -- `servers` command that writes one waits for this short transaction.
    --
    -- Layer 1: a server is judged only once this claim holds its row, so no other claim can lease
    -- it, nor a finish or a re-check write it, until this one commits. One that another
    -- transaction wrote since the pass's snapshot is re-read when locked, with its new
    -- next_check_at, and must still be due: one leased by another claim no longer is. Its
    -- judgment reads the jobs as of the pass's snapshot, as the single statement of 00021 did: a
    -- job newer than that snapshot was opened by a claim that leased the server, and the re-read
    -- sees the lease.
    --
    -- Between passes this claim holds no lock on the servers it has not reached: one whose
    -- next_check_at moves meanwhile is met where it now stands if that is after the walk's key,
    -- and locked and judged then, fresh; one that moves before the key is left to the next claim.
    -- The walk resumes after the greatest key it locked (a re-read row may have moved forward,
    -- still due), never before it, so no server is locked or judged twice, no job is opened
    -- twice, and the passes' answers follow each other in claim order.
    LOOP
        v_asked := p_limit - cardinality(a_job);
        WITH locked AS MATERIALIZED (
            SELECT s.id, s.slug, s.endpoint_url, s.kind, s.transport, s.status, s.next_check_at,
                   s.maintainer_claimed_at
              FROM servers AS s
             -- The due range of servers_due_order_idx, from the walk's key, in its order, up to
             -- what the claim lacks (queries/claim_plan_test.go holds the plan to it).
             WHERE s.status = 'active'
               AND s.next_check_at <= v_now
               AND (s.next_check_at, s.id) > (v_after_at, v_after_id)
               -- A server with an open job is never claimable (open_job, or abandoned until a
               -- round's sweep closes it): passed over unlocked, so that a small claim behind a
               -- run of them neither walks them pass by pass nor holds them from their finishes.
               -- A job opened after this statement's snapshot comes with a lease the re-read row
               -- shows; one closed after it only leaves the server to the next claim.
               -- A subquery per server (a scalar one is never made a join): as NOT EXISTS, the
               -- planner may read the whole queue once behind a Materialize and filter it per server
               -- when its statistics say the queue is near empty (00027).
               AND (SELECT busy.job_id FROM probe_open_jobs AS busy WHERE busy.server_id = s.id LIMIT 1) IS NULL
             ORDER BY s.next_check_at, s.id
             LIMIT v_asked
               FOR UPDATE OF s SKIP LOCKED
        ), picked AS (
            SELECT l.id, l.slug, l.endpoint_url, l.kind, l.transport, l.next_check_at, c.reason
              FROM locked AS l
             CROSS JOIN LATERAL probe_claim_state(l.id, l.status, l.next_check_at, l.maintainer_claimed_at,
                                                  v_now, p_min_spacing, p_in_flight) AS c
             WHERE c.state = 'claimable'
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
        ), answers AS (
            SELECT i.id AS job, pk.id AS server, pk.slug, pk.endpoint_url, pk.kind, pk.transport,
                   pk.next_check_at AS due, l.next_check_at AS lease, i.reason, i.requested_at
              FROM inserted AS i
              JOIN picked AS pk ON pk.id = i.server_id
              JOIN leased AS l ON l.id = i.server_id
        )
        SELECT w.got, w.after_at, w.after_id,
               a.job, a.server, a.slug, a.url, a.kind, a.transport, a.due, a.lease, a.reason, a.requested
          INTO v_got, v_after_at, v_after_id,
               n_job, n_server, n_slug, n_url, n_kind, n_transport, n_due, n_lease, n_reason, n_requested
          FROM (SELECT count(*)::integer AS got,
                       (array_agg(l.next_check_at ORDER BY l.next_check_at DESC, l.id DESC))[1] AS after_at,
                       (array_agg(l.id ORDER BY l.next_check_at DESC, l.id DESC))[1] AS after_id
                  FROM locked AS l) AS w
         CROSS JOIN (SELECT array_agg(an.job          ORDER BY an.due, an.server) AS job,
                            array_agg(an.server       ORDER BY an.due, an.server) AS server,
                            array_agg(an.slug         ORDER BY an.due, an.server) AS slug,
                            array_agg(an.endpoint_url ORDER BY an.due, an.server) AS url,
                            array_agg(an.kind         ORDER BY an.due, an.server) AS kind,
                            array_agg(an.transport    ORDER BY an.due, an.server) AS transport,
                            array_agg(an.due          ORDER BY an.due, an.server) AS due,
                            array_agg(an.lease        ORDER BY an.due, an.server) AS lease,
                            array_agg(an.reason       ORDER BY an.due, an.server) AS reason,
                            array_agg(an.requested_at ORDER BY an.due, an.server) AS requested
                       FROM answers AS an) AS a;
        IF n_job IS NOT NULL THEN
            a_job       := a_job || n_job;
            a_server    := a_server || n_server;
            a_slug      := a_slug || n_slug;
            a_url       := a_url || n_url;
            a_kind      := a_kind || n_kind;
            a_transport := a_transport || n_transport;
            a_due       := a_due || n_due;
            a_lease     := a_lease || n_lease;
            a_reason    := a_reason || n_reason;
            a_requested := a_requested || n_requested;
        END IF;
        EXIT WHEN v_got < v_asked OR cardinality(a_job) >= p_limit;
    END LOOP;

    -- The answers, in claim order, without another statement.
    FOR i IN 1 .. cardinality(a_job) LOOP
        job_id                := a_job[i];
        server_id             := a_server[i];
        slug                  := a_slug[i];
        endpoint_url          := a_url[i];
        kind                  := a_kind[i];
        transport             := a_transport[i];
        due_at                := a_due[i];
        claimed_next_check_at := a_lease[i];
        reason                := a_reason[i];
        requested_at          := a_requested[i];
        RETURN NEXT;
    END LOOP;
END
$probe$;
-- +goose StatementEnd


-- +goose Down
-- 00024's bodies, with the settings 00025 gave the claim.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim_state(
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
                                        AND m.requested_at >= p_maintainer_claimed_at
                                        -- the future's partitions pruned (see the spacing guard's)
                                        AND m.requested_at <= p_now + interval '1 day')
                    THEN 'maintainer_claim' ELSE 'scheduled' END AS reason) AS r
  -- The open job (probe_open_jobs, 00017: one per server while layer 4 stands).
  LEFT JOIN LATERAL (SELECT oj.job_id, oj.requested_at FROM probe_open_jobs AS oj
                      WHERE oj.server_id = p_server_id
                      ORDER BY oj.requested_at DESC LIMIT 1) AS o ON true
  -- Layer 3, the spacing guard: the last job requested within it. Bounded on both sides so that
  -- only the jobs' partitions holding that range are read: the ones before it, and the ones made
  -- ahead for the coming days (00017), are pruned. The upper bound is a day past p_now, not p_now:
  -- a claim requests its jobs by the database's clock (or the p_now it was given), and a caller's
  -- p_now (the dry run's, servers show's) may lag that clock by seconds, so a job requested just
  -- "after" p_now still counts; nothing requests a job a day ahead of the clock.
  LEFT JOIN LATERAL (SELECT max(p.requested_at) AS last FROM probe_jobs AS p
                      WHERE p.server_id = p_server_id
                        AND p.requested_at > p_now - p_min_spacing
                        AND p.requested_at <= p_now + interval '1 day') AS sp ON true
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim_due(
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
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $probe$
DECLARE
    v_isolation text;
    v_locked    text;
    v_now       timestamptz;
    v_asked     integer;
    v_got       integer;
    -- where the walk of the due range resumes: after this key (next_check_at, id), which no
    -- server's key precedes at first
    v_after_at  timestamptz := '-infinity';
    v_after_id  bigint      := -9223372036854775808;
    -- the answers, a column each, in claim order
    a_job       bigint[]      := '{}';
    a_server    bigint[]      := '{}';
    a_slug      text[]        := '{}';
    a_url       text[]        := '{}';
    a_kind      text[]        := '{}';
    a_transport text[]        := '{}';
    a_due       timestamptz[] := '{}';
    a_lease     timestamptz[] := '{}';
    a_reason    text[]        := '{}';
    a_requested timestamptz[] := '{}';
    -- one pass's answers
    n_job       bigint[];
    n_server    bigint[];
    n_slug      text[];
    n_url       text[];
    n_kind      text[];
    n_transport text[];
    n_due       timestamptz[];
    n_lease     timestamptz[];
    n_reason    text[];
    n_requested timestamptz[];
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

    -- Lock first, judge after. Each pass is one statement: it locks the next due servers in the
    -- index's order, as many as the claim still lacks, SKIP LOCKED; judges only those
    -- (probe_claim_state: the in-flight guard, layer 3's spacing guard, the maintainer's
    -- re-check); and opens the jobs of the claimable ones and leases them. A server another claim
    -- holds is skipped unjudged. A pass that locked fewer servers than it asked for reached the
    -- end of the due range (skipped servers do not count against its limit), so the walk stops
    -- there, or when the claim has its limit. Each pass walks past every server it locked, so the
    -- walk ends, and the servers judged are the servers locked. The common case is one pass.
    --
    -- Servers judged not claimable stay locked until the claim commits, as the ones it leased do:
    -- another claim skips them meanwhile (it would not have taken them either), and a finish or a
    -- `servers` command that writes one waits for this short transaction.
    --
    -- Layer 1: a server is judged only once this claim holds its row, so no other claim can lease
    -- it, nor a finish or a re-check write it, until this one commits. One that another
    -- transaction wrote since the pass's snapshot is re-read when locked, with its new
    -- next_check_at, and must still be due: one leased by another claim no longer is. Its
    -- judgment reads the jobs as of the pass's snapshot, as the single statement of 00021 did: a
    -- job newer than that snapshot was opened by a claim that leased the server, and the re-read
    -- sees the lease.
    --
    -- Between passes this claim holds no lock on the servers it has not reached: one whose
    -- next_check_at moves meanwhile is met where it now stands if that is after the walk's key,
    -- and locked and judged then, fresh; one that moves before the key is left to the next claim.
    -- The walk resumes after the greatest key it locked (a re-read row may have moved forward,
    -- still due), never before it, so no server is locked or judged twice, no job is opened
    -- twice, and the passes' answers follow each other in claim order.
    LOOP
        v_asked := p_limit - cardinality(a_job);
        WITH locked AS MATERIALIZED (
            SELECT s.id, s.slug, s.endpoint_url, s.kind, s.transport, s.status, s.next_check_at,
                   s.maintainer_claimed_at
              FROM servers AS s
             -- The due range of servers_due_order_idx, from the walk's key, in its order, up to
             -- what the claim lacks (queries/claim_plan_test.go holds the plan to it).
             WHERE s.status = 'active'
               AND s.next_check_at <= v_now
               AND (s.next_check_at, s.id) > (v_after_at, v_after_id)
               -- A server with an open job is never claimable (open_job, or abandoned until a
               -- round's sweep closes it): passed over unlocked, so that a small claim behind a
               -- run of them neither walks them pass by pass nor holds them from their finishes.
               -- A job opened after this statement's snapshot comes with a lease the re-read row
               -- shows; one closed after it only leaves the server to the next claim.
               AND NOT EXISTS (SELECT 1 FROM probe_open_jobs AS busy WHERE busy.server_id = s.id)
             ORDER BY s.next_check_at, s.id
             LIMIT v_asked
               FOR UPDATE OF s SKIP LOCKED
        ), picked AS (
            SELECT l.id, l.slug, l.endpoint_url, l.kind, l.transport, l.next_check_at, c.reason
              FROM locked AS l
             CROSS JOIN LATERAL probe_claim_state(l.id, l.status, l.next_check_at, l.maintainer_claimed_at,
                                                  v_now, p_min_spacing, p_in_flight) AS c
             WHERE c.state = 'claimable'
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
        ), answers AS (
            SELECT i.id AS job, pk.id AS server, pk.slug, pk.endpoint_url, pk.kind, pk.transport,
                   pk.next_check_at AS due, l.next_check_at AS lease, i.reason, i.requested_at
              FROM inserted AS i
              JOIN picked AS pk ON pk.id = i.server_id
              JOIN leased AS l ON l.id = i.server_id
        )
        SELECT w.got, w.after_at, w.after_id,
               a.job, a.server, a.slug, a.url, a.kind, a.transport, a.due, a.lease, a.reason, a.requested
          INTO v_got, v_after_at, v_after_id,
               n_job, n_server, n_slug, n_url, n_kind, n_transport, n_due, n_lease, n_reason, n_requested
          FROM (SELECT count(*)::integer AS got,
                       (array_agg(l.next_check_at ORDER BY l.next_check_at DESC, l.id DESC))[1] AS after_at,
                       (array_agg(l.id ORDER BY l.next_check_at DESC, l.id DESC))[1] AS after_id
                  FROM locked AS l) AS w
         CROSS JOIN (SELECT array_agg(an.job          ORDER BY an.due, an.server) AS job,
                            array_agg(an.server       ORDER BY an.due, an.server) AS server,
                            array_agg(an.slug         ORDER BY an.due, an.server) AS slug,
                            array_agg(an.endpoint_url ORDER BY an.due, an.server) AS url,
                            array_agg(an.kind         ORDER BY an.due, an.server) AS kind,
                            array_agg(an.transport    ORDER BY an.due, an.server) AS transport,
                            array_agg(an.due          ORDER BY an.due, an.server) AS due,
                            array_agg(an.lease        ORDER BY an.due, an.server) AS lease,
                            array_agg(an.reason       ORDER BY an.due, an.server) AS reason,
                            array_agg(an.requested_at ORDER BY an.due, an.server) AS requested
                       FROM answers AS an) AS a;
        IF n_job IS NOT NULL THEN
            a_job       := a_job || n_job;
            a_server    := a_server || n_server;
            a_slug      := a_slug || n_slug;
            a_url       := a_url || n_url;
            a_kind      := a_kind || n_kind;
            a_transport := a_transport || n_transport;
            a_due       := a_due || n_due;
            a_lease     := a_lease || n_lease;
            a_reason    := a_reason || n_reason;
            a_requested := a_requested || n_requested;
        END IF;
        EXIT WHEN v_got < v_asked OR cardinality(a_job) >= p_limit;
    END LOOP;

    -- The answers, in claim order, without another statement.
    FOR i IN 1 .. cardinality(a_job) LOOP
        job_id                := a_job[i];
        server_id             := a_server[i];
        slug                  := a_slug[i];
        endpoint_url          := a_url[i];
        kind                  := a_kind[i];
        transport             := a_transport[i];
        due_at                := a_due[i];
        claimed_next_check_at := a_lease[i];
        reason                := a_reason[i];
        requested_at          := a_requested[i];
        RETURN NEXT;
    END LOOP;
END
$probe$;
-- +goose StatementEnd

