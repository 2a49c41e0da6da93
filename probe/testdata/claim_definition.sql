-- The definition (CREATE OR REPLACE FUNCTION ...) of the claim: probe_claim's 6-argument form.
SELECT pg_get_functiondef(p.oid)
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema()
   AND p.proname = 'probe_claim'
   AND p.pronargs = 6;
