-- A day of finished jobs for every server, then fresh statistics: a production database has a
-- long, analyzed job history, and the claim's plan depends on it.
INSERT INTO probe_jobs (server_id, reason, requested_at, finished_at, outcome)
SELECT s.id, 'scheduled', now() - interval '1 day', now() - interval '1 day' + interval '1 second', 'ok'
  FROM servers AS s;
ANALYZE servers;
ANALYZE probe_jobs;
