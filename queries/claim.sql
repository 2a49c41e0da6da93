-- name: Claim
-- One claim: probe_claim_due (migrations/00021_claim_due.sql; since 00024_claim_lock_first.sql it
-- locks the due servers before it judges them), which leases each claimed server until its job's
-- in-flight window ends. Run it outside any transaction of the caller's, so the
-- advisory lock is released as soon as the claim commits. It does not close abandoned jobs: a
-- round does, once, when it starts (CloseAbandoned).
-- @timeline is the timeline the round's failover journal was opened on (CurrentTimeline; under
-- a worker, the invocation's), NULL without a journal:
-- on any other the claim claims nothing (a limit of 0), judged in the statement that would claim,
-- on its connection. A claim sent again after its connection broke may reach a standby promoted
-- meanwhile, where the servers whose claims the failover lost look due: it must not claim them
-- (the invocation's own look at the timeline may have found the database away).
SELECT c.job_id, c.server_id, c.slug, c.endpoint_url, c.kind, c.transport, c.due_at,
       c.claimed_next_check_at, c.reason, c.requested_at
  FROM probe_claim_due(p_round_id    => @round_id,
                       p_invocation  => @invocation,
                       p_limit       => CASE WHEN @timeline::bigint IS NULL THEN @limit::integer
                                             WHEN @timeline::bigint = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                                             THEN @limit::integer
                                             ELSE 0 END,
                       p_min_spacing => @min_spacing::interval,
                       p_in_flight   => @in_flight::interval,
                       p_now         => @now::timestamptz) AS c;

-- name: CloseAbandoned
-- Closes the jobs open past the in-flight window ($1) as abandoned, as of $2 (now when NULL):
-- probe_close_abandoned (migrations/00021_claim_due.sql), once per round, before its claims.
SELECT probe_close_abandoned(p_in_flight => $1::interval, p_now => $2::timestamptz) AS closed;

-- name: ClaimPreview
-- What a round started now would decide for each server whose next check time has passed,
-- read-only and without its lock (for `run round --dry-run`): probe_claim_state, the claim's own
-- rules (migrations/00021_claim_due.sql). state: claimable | abandoned (claimable once the round's
-- sweep closed its job) | open_job | spacing | paused | delisted. claimable_at: when the server
-- becomes claimable if nothing else changes; NULL for paused or delisted servers.
WITH p AS (
    SELECT coalesce($3::timestamptz, now()) AS now,
           $1::interval                     AS spacing,
           $2::interval                     AS in_flight
)
SELECT s.id AS server_id, s.slug, s.status, s.next_check_at, c.reason,
       (SELECT max(l.requested_at) FROM probe_jobs AS l WHERE l.server_id = s.id) AS last_requested_at,
       c.state, c.claimable_at
  FROM servers AS s
 CROSS JOIN p
 CROSS JOIN LATERAL probe_claim_state(s.id, s.status, s.next_check_at, s.maintainer_claimed_at,
                                      p.now, p.spacing, p.in_flight) AS c
 WHERE s.next_check_at <= p.now
 ORDER BY s.next_check_at, s.id;

-- name: ServerNextCheck
-- What decides one server's next claim as of @at, by the claim's own rules (probe_claim_state,
-- migrations/00021_claim_due.sql): its state, when it becomes claimable, its open job and the
-- last job within the spacing guard. The spacing guard is the active release's, else
-- @default_spacing (a round's default); @in_flight is the in-flight window. No row: no server @id.
WITH p AS (
    SELECT coalesce((SELECT r.min_spacing FROM releases AS r WHERE r.active), @default_spacing::interval) AS spacing
)
SELECT c.state, c.reason, c.claimable_at, c.open_job_id, c.open_requested_at, c.spaced_since,
       p.spacing AS min_spacing
  FROM servers AS s
 CROSS JOIN p
 CROSS JOIN LATERAL probe_claim_state(s.id, s.status, s.next_check_at, s.maintainer_claimed_at,
                                      @at::timestamptz, p.spacing, @in_flight::interval) AS c
 WHERE s.id = @id;

-- name: CountNotDue
-- Active servers whose next check time has not come yet, and the soonest of them.
SELECT count(*) AS servers, min(s.next_check_at) AS soonest
  FROM servers AS s
 WHERE s.status = 'active' AND s.next_check_at > coalesce($1::timestamptz, now());

-- name: CountLeased
-- Active servers in flight under a lease (probe_claim_due, migrations/00021_claim_due.sql): not
-- due, their next check time the lease's end of their open job ($2 is the in-flight window).
SELECT count(*) AS leased
  FROM servers AS s
 WHERE s.status = 'active'
   AND s.next_check_at > coalesce($1::timestamptz, now())
   AND EXISTS (SELECT 1 FROM probe_jobs AS o
                WHERE o.server_id = s.id
                  AND o.finished_at IS NULL
                  AND s.next_check_at = o.requested_at + $2::interval);

-- name: LostClaim
-- The jobs of a claim that committed while its answer was lost (its connection broke at the
-- commit: a restart, a reset, a failover to a synchronous standby), to be checked as claimed:
-- open jobs of invocation @invocation of round @round_id
--   - requested within the last @since (how long ago, by the caller's own clock, the claim whose
--     retry asks was first sent, and the longest this look may take to reach the database:
--     durations only, so no clock's skew counts), so not an earlier claim's job;
--   - with an id past @after_job (the last job of the invocation when this attempt began: an
--     earlier attempt's jobs, whose results may wait in a spool, are never taken);
--   - that the invocation does not hold (@known);
--   - whose server still has their lease as next check time (next_check_at = requested_at +
--     @in_flight: not re-checked, rescued or advanced since);
-- at most @limit (what the claim asked for), in claim order. Read from the open-job queue by its
-- requested_at index: a few rows, each job then found in its day's partition by its key.
SELECT j.id AS job_id, s.id AS server_id, s.slug, s.endpoint_url, s.kind, s.transport,
       j.requested_at AS due_at, s.next_check_at AS claimed_next_check_at, j.reason, j.requested_at
  FROM probe_open_jobs AS o
  JOIN probe_jobs AS j ON j.id = o.job_id AND j.requested_at = o.requested_at
  JOIN servers AS s ON s.id = j.server_id
 WHERE o.requested_at >= now() - @since::interval
   AND j.round_id = @round_id
   AND j.invocation = @invocation
   AND j.id > @after_job
   AND j.finished_at IS NULL
   AND NOT (j.id = ANY (@known::bigint[]))
   AND s.next_check_at = j.requested_at + @in_flight::interval
 ORDER BY j.id
 LIMIT @limit;
