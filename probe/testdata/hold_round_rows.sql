-- Run inside the test's transaction: holds every round row, so that a claim's insert blocks in its
-- foreign-key check on probe_jobs.round_id (FOR KEY SHARE) after it has read (and, for a leasing
-- claim, locked) its servers, until the test lets go. (Holding the server rows instead would make
-- a claim that skips locked rows skip them all.)
SELECT id FROM probe_rounds ORDER BY id FOR UPDATE;
