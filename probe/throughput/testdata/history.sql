-- Gives every server the history of a server in its steady state (PROBECTL_BENCH_HISTORY=1): its
-- last run 13 hours ago, ok, up for its whole 30-day window (a rollup, 29 days of runs counted,
-- an alert state that is up), so that a round's finishes update these rows, as every round after
-- a server's first does, instead of inserting them.
WITH r AS (
    INSERT INTO server_rollups (server_id, last_run_id, last_run_at, last_outcome, uptime_30d)
    SELECT s.id, s.id, now() - interval '13 hours', 'ok', 1.0 FROM servers AS s
), d AS (
    INSERT INTO server_run_days (server_id, day, ok, counted)
    SELECT s.id, (now() AT TIME ZONE 'UTC')::date - g, 2, 2
      FROM servers AS s CROSS JOIN generate_series(1, 29) AS g
)
UPDATE alert_states
   SET state = 'up', consecutive_ok = 58, last_run_id = server_id, last_run_at = now() - interval '13 hours',
       changed_at = now() - interval '30 days',
       -- the last 10 runs of its streak, as many as the alerts' trigger keeps (00023)
       streak_runs = ARRAY(SELECT server_id * 100 + g FROM generate_series(1, 10) AS g);
