-- +goose Up
-- A batched finish does not ask, run by run, what it has already made sure of (issue 25).
--
-- probe_runs_once (00019) holds "one run per job" across the runs' partitions for every path that
-- stores a run: before each insert it locks the run's job and looks for a run of that job where
-- another could be (its day's partition and the default one). probe_finish_many (00020, 00023)
-- does both for its whole batch before it inserts: it locks every job of the batch first, in id
-- order, then, in its next statement (under READ COMMITTED a later snapshot, taken once it holds
-- the locks), looks up each job's stored run, in the same partitions and more (a run keyed
-- '-infinity' as well), and inserts a run only for a job that has none; a job named twice refuses
-- the batch. Every other insert of a run the trigger looks for (keyed the job's claim time, or
-- NULL) takes the job's lock first: the trigger does. So, for the runs probe_finish_many inserts,
-- the trigger's lock is one the transaction holds and its lookup can only find what
-- probe_finish_many's found: nothing. (Under REPEATABLE READ the trigger's lookup would read the
-- transaction's snapshot too: no worse. probectl finishes under READ COMMITTED.)
--
-- The trigger now fires only where it still decides something: probe_finish_many sets
-- probectl.runs_once to 'checked' for its own statements (a setting of the function, restored when
-- it returns, whatever it returns), and the trigger's WHEN skips the call while it is so. Every
-- other path (probe_finish, the advance-first finish, the spool's and journal's restores, the
-- previous binary's statements, a hand-written INSERT) fires it as before. A session could set
-- probectl.runs_once itself, but a role that can insert runs by hand can already store one keyed
-- '-infinity', which the trigger never checks: it guards probectl's own paths, as it did. The
-- setting is probe_finish_many's alone: set for a role or a database (ALTER ROLE ... SET,
-- PGOPTIONS), it would switch the check off for every path, probe_finish's and the restores'
-- included (the README says so). queries/finish_runs_once_test.go holds both sides: the
-- trigger is not called for a batch's runs and is called for every other finish's; a batch stores
-- no second run of a job whose run another path stored in another partition, and waits for a
-- finish of its job that another transaction has not committed yet.
--
-- DROP TRIGGER takes the whole runs table: the migration waits at most 5 s for it (a long audit
-- holds it), and then fails, changing nothing, rather than queue every finish behind it; run it
-- again.
--
-- Measured alone in one session (10,000 servers claimed in claims of 17 and finished in batches of
-- 270 by probe_finish_many, each server's second round or later), down and up alternately, twice
-- each: the finishes took 1,754-1,799 ms before and 1,467-1,485 ms after, ~29 us a server less
-- (probe_runs_once itself was 18-20 us a run in pg_stat_user_functions; the rest is the trigger's
-- call and its settings saved and restored, 00025).
--
-- Rollback-safe: the function's body and signature are unchanged (the previous binary's batches
-- skip the trigger too, and store as before), and deploy verify's functions check, which reads the
-- bodies, sees no change. Down gives the trigger back to every insert.

SET LOCAL lock_timeout = '5s';

ALTER FUNCTION probe_finish_many(bigint[], bigint[], timestamptz[], timestamptz[], text[], text[], timestamptz[],
                                 timestamptz[], integer[], jsonb[], jsonb[], timestamptz)
    SET probectl.runs_once = 'checked';

DROP TRIGGER probe_runs_once ON probe_runs;
CREATE TRIGGER probe_runs_once BEFORE INSERT ON probe_runs FOR EACH ROW
    WHEN (current_setting('probectl.runs_once', true) IS DISTINCT FROM 'checked')
    EXECUTE FUNCTION probe_runs_once();

-- +goose Down
SET LOCAL lock_timeout = '5s';

DROP TRIGGER probe_runs_once ON probe_runs;
CREATE TRIGGER probe_runs_once BEFORE INSERT ON probe_runs FOR EACH ROW EXECUTE FUNCTION probe_runs_once();

ALTER FUNCTION probe_finish_many(bigint[], bigint[], timestamptz[], timestamptz[], text[], text[], timestamptz[],
                                 timestamptz[], integer[], jsonb[], jsonb[], timestamptz)
    RESET probectl.runs_once;
