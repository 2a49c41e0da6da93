-- The floor's finish of a claim's checks, in one statement: the runs stored, the jobs closed,
-- the servers advanced (a compare-and-set on the lease, as probectl's).
WITH f AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[], $5::timestamptz[],
                         $6::timestamptz[], $7::jsonb[], $8::jsonb[])
             AS u(job_id, server_id, lease, outcome, started_at, finished_at, result, envelope)
), runs AS (
    INSERT INTO floor_runs (job_id, server_id, started_at, finished_at, result, envelope)
    SELECT f.job_id, f.server_id, f.started_at, f.finished_at, f.result, f.envelope FROM f
), closed AS (
    UPDATE floor_jobs AS j SET finished_at = now(), outcome = f.outcome FROM f WHERE j.id = f.job_id
)
UPDATE floor_servers AS s
   SET next_check_at = now() + s.check_interval
  FROM f
 WHERE s.id = f.server_id AND s.next_check_at = f.lease;
