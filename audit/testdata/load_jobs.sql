-- @per_server jobs per server spread evenly over [@start, @start + @span), each server at its own
-- offset, finished two seconds after the request; every @dup_every-th server also gets the
-- incident's duplicate, requested 0.168 s after its first job finished. Inserted in request
-- order, as a live table fills.
INSERT INTO probe_jobs (server_id, reason, requested_at, finished_at, outcome)
SELECT server_id, 'scheduled', at, at + interval '2 seconds', 'ok'
  FROM (SELECT s.id AS server_id,
               @start::timestamptz + (@span::interval / @per_server::int) * (k + (hashint8(s.id) & 1048575)::float8 / 1048576) AS at
          FROM servers s, generate_series(0, @per_server::int - 1) k
        UNION ALL
        SELECT s.id,
               @start::timestamptz + (@span::interval / @per_server::int) * ((hashint8(s.id) & 1048575)::float8 / 1048576)
                 + interval '2.168 seconds'
          FROM servers s
         WHERE s.id % @dup_every::int = 0) j
 ORDER BY at;
