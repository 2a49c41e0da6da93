package queries

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The backoff between two attempts of a write: it doubles from RetryFirstWait up to RetryMaxWait.
// A restart of PostgreSQL takes about a second; a failover tens of seconds, and each write's
// budget bounds how long it waits for one.
const (
	RetryFirstWait = 100 * time.Millisecond
	RetryMaxWait   = 2 * time.Second
)

// Retry makes write until it succeeds, fails with an error that trying again cannot change (not
// Transient, or one of final: an answer, not a failure), or ctx, the write's whole budget, ends;
// each attempt has at most each of it. It returns the last error. An attempt after a failure runs
// on a fresh connection: the pool destroys a connection that broke, and pings one that sat idle
// for more than a second before it lends it. Every write of a round (probe) and the record of an
// alert's delivery attempt (internal/alerts) retry through it.
func Retry(ctx context.Context, each time.Duration, log *slog.Logger, what string,
	write func(ctx context.Context) error, final ...error) error {
	wait := RetryFirstWait
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, each)
		err := write(actx)
		cancel()
		if err == nil || isOneOf(err, final) || !Transient(err) || ctx.Err() != nil {
			return err
		}
		log.Warn("write failed; trying again on a fresh connection", "write", what, "attempt", attempt,
			"retry_in", wait, "err", err)
		if !Pause(ctx, wait) {
			return err
		}
		wait = min(2*wait, RetryMaxWait)
	}
}

func isOneOf(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// Pause waits d before a write is tried again, and says false when ctx, the write's budget, ends
// first: a retry then has no time left.
func Pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RetryLock runs fn until it does not fail on its lock timeout (LockNotAvailable), at most tries
// times, pausing between tries for pause, doubled after each up to maxPause (maxPause = pause: a
// fixed pause). It returns the tries made and fn's last error, or the context's error when the
// context ends during a pause.
func RetryLock(ctx context.Context, tries int, pause, maxPause time.Duration, fn func() error) (int, error) {
	for try := 1; ; try++ {
		err := fn()
		if !LockNotAvailable(err) || try >= tries {
			return try, err
		}
		if !Pause(ctx, pause) {
			return try, ctx.Err()
		}
		pause = min(2*pause, maxPause)
	}
}

// LockNotAvailable says err is PostgreSQL's lock_not_available (55P03): a statement gave up on its
// lock_timeout, and may be tried again.
func LockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

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
// the connection broke or could not be made (for a reason that goes away: not a wrong role,
// password, privilege or database), the server is shutting down or starting up, it ran
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
	var connecting *pgconn.ConnectError
	if errors.As(err, &connecting) && pgErr.Code == "55000" {
		// A connection the server refused as it was made because the database takes none for
		// now (ALLOW_CONNECTIONS off, as a failover, a restore or an operator leaves it): class
		// 55 is no connection class, but this one goes away. The other refusals that do (too
		// many clients, 53300; starting up, 57P03) are in the classes below; a role, a password,
		// a privilege or a database that is not right (28, 42501, 3D) is not tried again.
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
