-- name: ExportRuns
-- The runs of the jobs requested before $1 (and at or after $2 when given), in id order, with
-- what an archive keeps of each: its job, its server, its envelope (docs/retention.md).
SELECT r.id AS run_id, r.job_id, j.round_id, s.slug AS server, s.endpoint_url, s.kind,
       j.requested_at, r.started_at, r.finished_at, j.outcome AS job_outcome, r.late,
       r.requests, r.result, r.envelope
  FROM probe_runs AS r
  JOIN probe_jobs AS j ON j.id = r.job_id
  JOIN servers AS s ON s.id = r.server_id
 WHERE j.requested_at < $1
   AND ($2::timestamptz IS NULL OR j.requested_at >= $2)
 ORDER BY r.id;

-- name: RecordExport
-- An export made: its file, range, count, largest run id and digest, by whom.
INSERT INTO probe_run_exports (file_name, before, range_from, runs, first_at, last_at, max_run_id, sha256, exported_by)
VALUES (@file_name, @before, @range_from, @runs, @first_at, @last_at, @max_run_id, @sha256, @exported_by)
RETURNING id, exported_at;

-- name: RunIDsDrawn
-- The last run id handed out so far (0: none): every run with an id up to it was drawn by a
-- transaction running now or ended. Read before OpenTransactions.
SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END AS drawn FROM probe_runs_id_seq AS s;

-- name: OpenTransactions
-- The other client transactions of this database running now that may hold a run id drawn and not
-- yet committed, by virtual transaction id (their lock on it): an export waits for them to end
-- (archive.Export). A run is drawn inside an INSERT (the statement is active) by a transaction
-- that has locked its job (it has a transaction id): one idle in a transaction without an id only
-- read, and is not waited for (a backup's snapshot, a forgotten psql BEGIN). A session whose state
-- this role may not see (NULL) is waited for.
SELECT l.virtualxid
  FROM pg_locks AS l
  JOIN pg_stat_activity AS a ON a.pid = l.pid
 WHERE l.locktype = 'virtualxid' AND l.granted AND l.pid <> pg_backend_pid()
   AND a.datname = current_database() AND a.backend_type = 'client backend'
   AND (a.backend_xid IS NOT NULL
        OR a.state IS NULL
        OR a.state NOT IN ('idle in transaction', 'idle in transaction (aborted)'));

-- name: TransactionsStillOpen
-- Which of the virtual transactions $1 are still running.
SELECT l.virtualxid
  FROM pg_locks AS l
 WHERE l.locktype = 'virtualxid' AND l.granted AND l.virtualxid = ANY ($1::text[]);
