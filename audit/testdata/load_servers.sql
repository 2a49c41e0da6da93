-- $1 servers on the standard plan, named bench-1, bench-2, ...
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
SELECT 'bench-' || n, 'https://bench-' || n || '.example/', 'http', 'standard', interval '12 hours', $2::timestamptz
  FROM generate_series(1, $1::int) n;
