-- Run inside the test's transaction: holds every server row, so that a claim's insert blocks in
-- its foreign-key check (FOR KEY SHARE) after it has read and inserted, until the test lets go.
SELECT id FROM servers ORDER BY id FOR UPDATE;
