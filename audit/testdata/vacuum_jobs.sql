-- Sets the visibility map (as autovacuum would have on a month of jobs) and the statistics.
VACUUM (ANALYZE) probe_jobs;
