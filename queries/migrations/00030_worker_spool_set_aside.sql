-- +goose Up
-- A worker says how many files its spool directory holds set aside for a person to read (spool
-- files and failover journals whose every result that could be stored was, and what is left no
-- replay can store: lines cut short, results kept for a person). They are on the worker's disk,
-- which status on another machine cannot read; before, a kept spooled result stayed counted in
-- spool_results, and status showed it from anywhere.
--
-- NOT NULL with a constant default: a previous binary's heartbeat, which lists its columns and does
-- not name this one, keeps writing (0: "none said"), and its SELECTs list their columns too
-- (queries/worker_spool_set_aside_test.go, both ways). The default writes no row; the CHECK is
-- checked against every row under the table's lock, one row a worker heard from in a day. The
-- lock is waited for at most 5 s (a worker's heartbeat holds it for a moment), and then the
-- migration fails, changing nothing.
SET LOCAL lock_timeout = '5s';

ALTER TABLE probectl_workers ADD COLUMN spool_set_aside integer NOT NULL DEFAULT 0 CHECK (spool_set_aside >= 0);

-- +goose Down
SET LOCAL lock_timeout = '5s';

ALTER TABLE probectl_workers DROP COLUMN spool_set_aside;
