-- For the benchmark's second yardstick: a count(*) run by one process, as the audit's scan is.
SET LOCAL max_parallel_workers_per_gather = 0;
