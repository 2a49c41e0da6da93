-- +goose Up
-- Two statements of a round were planned again on every call (issue 25: less per check).
--
-- PL/pgSQL keeps a plan per statement and session, but for a statement with parameters it plans
-- the first five calls with their values (a custom plan) and goes on doing so when the plan
-- without values (the generic one) is costed higher than those. A statement that reads a
-- partitioned table is: the generic plan counts every partition, a custom plan only those its
-- values leave. So these two were planned on every call, and planning cost more than running
-- (pg_stat_statements with track_planning under BenchmarkThroughput, 10,000 servers):
--
--   - the claim's pass (probe_claim_due, 00024): planned on 443 of 439 claims' passes, 3.8 ms a
--     plan against 3.3 ms to run it;
--   - probe_runs_once's job lock (00019), a row trigger: planned 10,004 times for 10,000 runs,
--     607 ms of planning against 76 ms of running.
--
-- Forced to their generic plans, each is planned once per session, and the partitions its
-- values leave out are pruned when it starts to run (the plans hold no scan of them:
-- queries/claim_plan_test.go reads the claim's). Measured by setting the mode for every statement
-- of the benchmark's server, alternately on and off, twice each: 2,286 and 2,312 servers/s with a
-- GET against 3,355 and 3,535; 3,674 and 3,556 no-op against 5,305 and 4,768.
--
-- A plan kept for the session is kept past the table sizes it was made for: made while
-- probe_open_jobs (a queue that empties between rounds) or a new day's partition was analysed
-- empty, it would read them by a Seq Scan, per server judged, for as long as the session lives or
-- until an ANALYZE. Every statement of both functions is meant to be an index probe, so both run
-- with enable_seqscan off too (queries/claim_generic_test.go: a claim planned while the open jobs
-- were none reads them by index once there are 15,000).
--
-- Not the batched finish: it plans its statements once per session already (PL/pgSQL's own
-- choice after five calls), and with enable_seqscan off its statement triggers read the alert
-- states by key per run rather than by one hash of them all, which measured slower (no-op 2,551
-- and 3,249 servers/s against 4,058 and 3,881). A day's runs partition analysed while empty can
-- have its stored-run lookup read the partition until autovacuum analyses it (about 50 runs on).
--
-- Additive: the functions keep their bodies and signatures; only their settings change, which
-- the previous binary never reads.
ALTER FUNCTION probe_claim_due(bigint, integer, integer, interval, interval, timestamptz)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION probe_claim_due(bigint, integer, integer, interval, interval, timestamptz)
    SET enable_seqscan = off;
ALTER FUNCTION probe_runs_once() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION probe_runs_once() SET enable_seqscan = off;

-- +goose Down
ALTER FUNCTION probe_runs_once() RESET enable_seqscan;
ALTER FUNCTION probe_runs_once() RESET plan_cache_mode;
ALTER FUNCTION probe_claim_due(bigint, integer, integer, interval, interval, timestamptz)
    RESET enable_seqscan;
ALTER FUNCTION probe_claim_due(bigint, integer, integer, interval, interval, timestamptz)
    RESET plan_cache_mode;
