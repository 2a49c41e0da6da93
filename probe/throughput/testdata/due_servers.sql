-- $1 due http servers that all point at one loopback fleet server ($2), imported together as an
-- import does (one next_check_at for all of them: the ties the claim must order by id).
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
SELECT 'tp-' || g, $2::text || '/s/' || g, 'http', 'standard', interval '12 hours', now() - interval '1 hour'
  FROM generate_series(1, $1::int) AS g;
