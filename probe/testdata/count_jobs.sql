-- Every job claimed so far, finished or not.
SELECT count(*) FROM probe_jobs;
