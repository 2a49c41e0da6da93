-- A database whose sessions default to REPEATABLE READ: the claim's lock would then be taken after
-- the snapshot its reads use.
DO $$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), 'repeatable read');
END $$;
