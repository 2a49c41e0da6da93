-- name: OpenJobs
-- Every job not finished, oldest first, with its server (and whether the server's next check
-- already moved past the job's request: the probe made its first write, advance, and not the
-- second, finish) and its round. The partial unique index on open jobs keeps this to at most one
-- row per server. `probectl status`, the status page and `probectl audit open` all read it;
-- whether a job is stale is decided in Go (audit.OpenJob), once.
SELECT j.id AS job_id, j.server_id, s.slug, j.round_id, r.trigger AS round_trigger,
       r.version AS round_version, j.invocation, j.reason, j.requested_at, s.next_check_at,
       s.next_check_at > j.requested_at AS advanced
  FROM probe_jobs AS j
  JOIN servers AS s ON s.id = j.server_id
  LEFT JOIN probe_rounds AS r ON r.id = j.round_id
 WHERE j.finished_at IS NULL
 ORDER BY j.requested_at, j.id;
