-- The definition (CREATE OR REPLACE FUNCTION ...) of the claim the round calls, to put it back.
SELECT pg_get_functiondef(p.oid)
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema()
   AND p.proname = 'probe_claim_due'
   AND p.pronargs = 6;
