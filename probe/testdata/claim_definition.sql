-- The definition (CREATE OR REPLACE FUNCTION ...) of the 6-argument form of the claim named $1
-- (probe_claim, probe_claim_lease or probe_claim_due).
SELECT pg_get_functiondef(p.oid)
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema()
   AND p.proname = $1
   AND p.pronargs = 6;
