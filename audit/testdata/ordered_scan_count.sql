-- The scan of queries.AuditDuplicateScan, the same rows in the same order from the same index,
-- counted inside the database so that no row leaves it. Its time is the floor of any audit that
-- walks the jobs in (server, request) order; OFFSET 0 keeps the ordered scan from being planned
-- away.
SELECT count(*)
  FROM (SELECT server_id, requested_at
          FROM probe_jobs
         WHERE requested_at >= $1::timestamptz
           AND requested_at <  $2::timestamptz
         ORDER BY server_id, requested_at
        OFFSET 0) j;
