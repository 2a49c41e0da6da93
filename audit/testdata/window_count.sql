-- The duplicate definition written as a window function, computed entirely in SQL: the jobs in
-- [$1, $2) and how many of them were requested less than $3 after the previous job of their
-- server. Tests use it as an independent oracle for the streaming scan; the benchmark times it.
SELECT count(*),
       count(*) FILTER (WHERE requested_at - prev_requested_at < $3::interval)
  FROM (SELECT requested_at,
               lag(requested_at) OVER (PARTITION BY server_id ORDER BY requested_at) AS prev_requested_at
          FROM probe_jobs
         WHERE requested_at >= $1::timestamptz - $3::interval
           AND requested_at <  $2::timestamptz) j
 WHERE requested_at >= $1::timestamptz;
