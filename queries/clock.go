package queries

// The database's clock. Every query that writes or judges a time by "now" takes it as a
// *time.Time argument, nil meaning the database's own clock: the SQL reads
// coalesce($n::timestamptz, now()) (or clock_timestamp()), so nil needs no conversion on the way
// and every process judges time by one clock. A fixed time (tests, --at) is passed as a pointer.
// Domain functions take `now *time.Time` in the same sense, from the command down: no zero
// time.Time stands for "now" anywhere.
