-- Closes a server's open job as abandoned, as a later claim does once the in-flight window has
-- passed, so that the round's own finish finds the job already closed.
UPDATE probe_jobs
   SET finished_at = clock_timestamp(),
       outcome     = 'abandoned',
       error       = 'closed by the test as abandoned'
 WHERE server_id = $1
   AND finished_at IS NULL;
