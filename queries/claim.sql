-- name: Claim
-- One claim: probe_claim_lease (migrations/00009_claim_lease.sql), which leases each claimed server
-- until its job's in-flight window ends. Run it outside any transaction of the caller's, so the
-- advisory lock is released as soon as the claim commits.
SELECT c.job_id, c.server_id, c.slug, c.endpoint_url, c.kind, c.transport, c.due_at,
       c.claimed_next_check_at, c.reason, c.requested_at
  FROM probe_claim_lease(p_round_id    => @round_id,
                         p_invocation  => @invocation,
                         p_limit       => @limit,
                         p_min_spacing => @min_spacing::interval,
                         p_in_flight   => @in_flight::interval,
                         p_now         => @now::timestamptz) AS c;

-- name: ClaimPreview
-- What probe_claim would decide for each server whose next check time has passed, read-only and
-- without its lock (for `run round --dry-run`). The rules mirror probe_claim's; a test holds the
-- two together. state: claimable | open_job | spacing | paused | delisted. claimable_at: when the
-- server becomes claimable if nothing else changes (an open job: when it would be closed as
-- abandoned, unless its finish moves the next check first); NULL for paused or delisted servers.
WITH p AS (
    SELECT coalesce($3::timestamptz, now()) AS now,
           $1::interval                     AS spacing,
           $2::interval                     AS in_flight
), v AS (
    SELECT s.id, s.slug, s.status, s.next_check_at,
           CASE WHEN s.maintainer_claimed_at IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                  WHERE m.server_id = s.id AND m.requested_at >= s.maintainer_claimed_at)
                THEN 'maintainer_claim' ELSE 'scheduled' END AS reason,
           (SELECT max(o.requested_at) FROM probe_jobs AS o
             WHERE o.server_id = s.id AND o.finished_at IS NULL
               AND o.requested_at > p.now - p.in_flight) AS open_requested_at,
           (SELECT max(l.requested_at) FROM probe_jobs AS l WHERE l.server_id = s.id) AS last_requested_at,
           p.now, p.spacing, p.in_flight
      FROM servers AS s, p
     WHERE s.next_check_at <= p.now
)
SELECT v.id AS server_id, v.slug, v.status, v.next_check_at, v.reason, v.last_requested_at,
       CASE WHEN v.status <> 'active'                 THEN v.status
            WHEN v.open_requested_at IS NOT NULL      THEN 'open_job'
            WHEN v.reason = 'scheduled' AND v.last_requested_at > v.now - v.spacing THEN 'spacing'
            ELSE 'claimable' END AS state,
       CASE WHEN v.status <> 'active'                 THEN NULL
            WHEN v.open_requested_at IS NOT NULL      THEN v.open_requested_at + v.in_flight
            WHEN v.reason = 'scheduled' AND v.last_requested_at > v.now - v.spacing
                                                      THEN v.last_requested_at + v.spacing
            ELSE v.now END AS claimable_at
  FROM v
 ORDER BY v.next_check_at, v.id;

-- name: CountNotDue
-- Active servers whose next check time has not come yet, and the soonest of them.
SELECT count(*) AS servers, min(s.next_check_at) AS soonest
  FROM servers AS s
 WHERE s.status = 'active' AND s.next_check_at > coalesce($1::timestamptz, now());

-- name: CountLeased
-- Active servers in flight under a lease (probe_claim_lease, migrations/00009_claim_lease.sql): not
-- due, their next check time the lease's end of their open job ($2 is the in-flight window).
SELECT count(*) AS leased
  FROM servers AS s
 WHERE s.status = 'active'
   AND s.next_check_at > coalesce($1::timestamptz, now())
   AND EXISTS (SELECT 1 FROM probe_jobs AS o
                WHERE o.server_id = s.id
                  AND o.finished_at IS NULL
                  AND s.next_check_at = o.requested_at + $2::interval);
