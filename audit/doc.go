// Package audit answers, from the database alone and without changing it, the questions incident
// responders and release managers ask after a change to the prober: did any server get checked
// twice, when, how close, and was it explained (Duplicates); did any server get more than the
// operators were promised, one round of at most 8 requests per check interval (Rate); and which
// jobs are still open, and which of those are stale (Open).
//
// Every audit reads in one READ ONLY, REPEATABLE READ transaction: the database itself refuses any
// write, all figures come from one snapshot, and the audits run on a hot standby and under a role
// that has only SELECT on the tables. Callers that already hold such a transaction (deploy verify
// reads several things from one snapshot) use the Tx variants, which never begin, commit or roll
// back anything themselves.
//
// The duplicate audit is one streaming pass over the probe_jobs (server_id, requested_at) index:
// counts are aggregated in SQL and only the duplicate pairs come back to Go, so memory does not
// grow with the population.
package audit
