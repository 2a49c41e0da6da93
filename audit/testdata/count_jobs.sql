-- A plain count of the jobs requested in [$1, $2): the benchmark's yardstick.
SELECT count(*)
  FROM probe_jobs
 WHERE requested_at >= $1::timestamptz
   AND requested_at <  $2::timestamptz;
