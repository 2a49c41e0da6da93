-- The claim as it was before migration 00009: probe_claim, which leaves a claimed server due while
-- its job is open, installed under the name the round calls (probe_claim_due, 00021), with the
-- shape that name returns. Only the demo's throwaway database and test databases get it: without it the
-- lease hides the gap between the incident's two writes, and there would be nothing to replay.
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
LANGUAGE sql VOLATILE
AS $incident$
SELECT c.job_id, c.server_id, c.slug, c.endpoint_url, c.kind, s.transport, c.claimed_next_check_at,
       c.claimed_next_check_at, c.reason, c.requested_at
  FROM probe_claim(p_round_id    => p_round_id,
                   p_invocation  => p_invocation,
                   p_limit       => p_limit,
                   p_min_spacing => p_min_spacing,
                   p_in_flight   => p_in_flight,
                   p_now         => p_now) AS c
  LEFT JOIN servers AS s ON s.id = c.server_id;
$incident$;
