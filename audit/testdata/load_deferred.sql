-- The secondary indexes and foreign keys of probe_jobs, each as the statement that drops it and
-- the statement that builds it again: a bulk load is several times faster without them, and
-- building them afterwards is one sort each. Read from the catalog, so it follows the migrations.
-- The definition of a partitioned table's index says ON ONLY (the parent alone, left invalid):
-- built again without ONLY, it is built on every partition, as the migration made it.
SELECT format('DROP INDEX %I', indexname), replace(indexdef, ' ON ONLY ', ' ON ')
  FROM pg_indexes
 WHERE schemaname = current_schema() AND tablename = 'probe_jobs' AND indexname <> 'probe_jobs_pkey'
UNION ALL
SELECT format('ALTER TABLE probe_jobs DROP CONSTRAINT %I', conname),
       format('ALTER TABLE probe_jobs ADD CONSTRAINT %I %s', conname, pg_get_constraintdef(oid))
  FROM pg_constraint
 WHERE conrelid = 'probe_jobs'::regclass AND contype = 'f';
