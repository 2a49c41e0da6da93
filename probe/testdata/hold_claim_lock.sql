-- Run on one connection of the test's: takes the claim's advisory lock (queries.ClaimLockKey) for
-- the session, so that a claim queues on it until the test lets go; when a claim holds it, this
-- waits for that claim's transaction to end.
SELECT pg_advisory_lock($1);
