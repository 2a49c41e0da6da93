-- name: OpenJobs
-- Every job not finished, oldest first, with its server and its round, and where the server's
-- next check stands against the job ($1 is the in-flight window):
--   leased:   it is the job's lease end (requested_at + window), where the claim
--             (probe_claim_due, 00021; probe_claim_lease, 00009) put it: the job is in flight under its lease, the
--             normal state of every job of a healthy round;
--   advanced: it moved past the request to anything but the lease end: the probe made its first
--             write (advance, which sets finish time + interval, never the lease end) and not the
--             second (finish), the signature of a probe that died between its two writes.
-- A previous binary's claim (probe_claim) leaves next_check_at where it was (<= requested_at):
-- neither. The partial unique index on open jobs keeps this to at most one row per server. `probectl status`, the status page and `probectl audit open` all read it;
-- whether a job is stale is decided in Go (audit.OpenJob), once.
SELECT j.id AS job_id, j.server_id, s.slug, j.round_id, r.trigger AS round_trigger,
       r.version AS round_version, j.invocation, j.reason, j.requested_at, s.next_check_at,
       s.next_check_at = j.requested_at + $1::interval AS leased,
       s.next_check_at > j.requested_at AND s.next_check_at <> j.requested_at + $1::interval AS advanced
  FROM probe_jobs AS j
  JOIN servers AS s ON s.id = j.server_id
  LEFT JOIN probe_rounds AS r ON r.id = j.round_id
 WHERE j.finished_at IS NULL
 ORDER BY j.requested_at, j.id;
