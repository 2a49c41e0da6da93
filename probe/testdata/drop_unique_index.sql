-- Layer 4 off: the database no longer refuses a second open job for a server.
DROP INDEX probe_jobs_one_open_per_server;
