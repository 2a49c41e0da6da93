package queries

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// runJobUnique is the unique constraint on probe_runs.job_id: one run per job.
const runJobUnique = "probe_runs_job_id_key"

// RunAlreadyStored says a finish failed because its job already has a run: a retried finish whose
// first attempt committed without the client hearing it, or a spooled result replayed twice. The
// run's job id is unique, so the observation is stored exactly once and the caller may treat the
// finish as done. (probe_finish as shipped in 00002 raises on a repeated job; a later version may
// answer with a no-op instead, which needs no help.)
func RunAlreadyStored(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == runJobUnique
}

// Transient says an error may go away if the same write is tried again, on another connection:
// the connection broke or could not be made, the server is shutting down or starting up, it ran
// out of resources, a timeout fired, or a serialization conflict. An error the server raised
// about the data (a constraint, a missing job) is not transient: trying again changes nothing.
func Transient(err error) bool {
	if err == nil || errors.Is(err, ErrClaimGone) || errors.Is(err, ErrRoundGone) {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		// Not an answer from the server: the network, the dial, a timeout or a cancel.
		return true
	}
	switch pgErr.Code[:2] {
	case "08", // connection exception
		"40", // transaction rollback (serialization failure, deadlock)
		"53", // insufficient resources
		"57", // operator intervention: admin shutdown, crash shutdown, cannot connect now, query canceled
		"58": // system error
		return true
	}
	return false
}
