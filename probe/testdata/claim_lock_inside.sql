-- The broken variant of probe_claim, created only in test databases: the advisory lock is taken
-- inside the statement that reads, so it comes after that statement's snapshot and a claim that
-- waited for it reads what was true before the previous claim committed.
CREATE FUNCTION probe_claim_lock_inside(p_round_id bigint, p_invocation integer, p_limit integer)
RETURNS TABLE (job_id bigint, server_id bigint)
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN QUERY
    WITH lock AS MATERIALIZED (
        SELECT pg_advisory_xact_lock(482956239461) AS held
    ), picked AS (
        SELECT s.id, s.next_check_at
          FROM servers AS s, lock
         WHERE s.status = 'active'
           AND s.next_check_at <= clock_timestamp()
           AND NOT EXISTS (SELECT 1 FROM probe_jobs AS o
                            WHERE o.server_id = s.id AND o.finished_at IS NULL)
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
    ), inserted AS (
        INSERT INTO probe_jobs AS j (server_id, round_id, invocation, requested_at)
        SELECT pk.id, p_round_id, p_invocation, clock_timestamp() FROM picked AS pk
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.server_id
    )
    SELECT i.id, i.server_id FROM inserted AS i;
END
$$;
