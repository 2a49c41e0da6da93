-- Empties what one measured pass wrote, so every pass starts from the same tables.
TRUNCATE servers, probe_rounds, probe_jobs, probe_runs, river_job RESTART IDENTITY CASCADE;
