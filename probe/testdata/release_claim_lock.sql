-- Lets go of the session-level claim lock taken with hold_claim_lock.sql.
SELECT pg_advisory_unlock($1);
