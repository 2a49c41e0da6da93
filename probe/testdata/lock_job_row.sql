-- Run inside the test's transaction: holds one job row, so that a claim's first write after its
-- lock (closing jobs past the in-flight window) blocks on it, after the claim has read the clock
-- and before the statement that reads the due servers takes its snapshot.
SELECT id FROM probe_jobs WHERE id = $1 FOR UPDATE;
