-- name: ListRuns
-- Runs newest first (run_facts: migrations/00007_history.sql). Every filter is optional (NULL:
-- any): @server a slug, @round_id, @outcomes the run's own outcomes, @since started at or after;
-- @limit at most this many rows.
SELECT f.*
  FROM run_facts AS f
 WHERE (@server::text IS NULL OR f.server_id = (SELECT x.id FROM servers AS x WHERE x.slug = @server))
   AND (@round_id::bigint IS NULL OR f.round_id = @round_id)
   AND (@outcomes::text[] IS NULL OR f.outcome = ANY (@outcomes::text[]))
   AND (@since::timestamptz IS NULL OR f.started_at >= @since)
 ORDER BY f.started_at DESC, f.id DESC
 LIMIT @limit;

-- name: GetRun
-- One run with what showing and verifying it needs: its server's endpoint as it is now, its job's
-- outcome and finish (by the database's clock, as a key's retirement is), the result and the
-- envelope.
SELECT f.*, s.endpoint_url, j.outcome AS job_outcome, j.finished_at AS job_finished_at,
       r.result, r.envelope,
       -- The job the envelope was signed for: the run's own, or for a result restored after a
       -- failover under a job of its own, the claim it answered (migrations/00014).
       coalesce(rj.original_job_id, f.job_id) AS signed_job_id
  FROM run_facts AS f
  JOIN probe_runs AS r ON r.id = f.id
  JOIN probe_jobs AS j ON j.id = f.job_id
  JOIN servers AS s ON s.id = f.server_id
  LEFT JOIN probe_restored_jobs AS rj ON rj.job_id = f.job_id
 WHERE f.id = $1;
