-- $1 due http servers for benchmarks, most overdue first.
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
SELECT 'bench-' || g, 'https://bench-' || g || '.example/', 'http', 'standard', interval '12 hours',
       now() - interval '1 hour' - (g * interval '1 millisecond')
  FROM generate_series(1, $1::int) AS g;
