package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/probectl/probectl/queries"
)

// A spooled or journaled result names its job by id. After an asynchronous failover the new
// primary may not hold that job (the claim never reached it), and it hands the same ids out again
// to other claims: the id alone would match the result to another server's job, count it stored
// and drop it. So a result is matched by its job id, server, round and requested time; a result
// whose job is not there, or is another claim's, is never counted as stored: it is restored under
// a finished job of its own (queries.RestoreRun), or kept for a person: its file is set aside
// (setAside) once the rest of it is stored, and said.

// clockSkew is how far the prober's clock (a result's StartedAt) may be from the database's (a
// job's requested_at) when a record without a requested time is matched.
const clockSkew = time.Minute

// matchJob says whether job, as the database holds it now, is the claim e answers. A record
// written before requested_at was spooled is matched by server and round, and by its check having
// started inside the job's in-flight window: conservative, since a mismatch is kept, never dropped.
func matchJob(e spoolEntry, job queries.ReplayedJob) bool {
	if job.ServerID != e.ServerID {
		return false
	}
	if e.RoundID != 0 && (job.RoundID == nil || *job.RoundID != e.RoundID) {
		return false
	}
	if e.RequestedAt != nil {
		return job.RequestedAt.Equal(*e.RequestedAt)
	}
	return !job.RequestedAt.After(e.StartedAt.Add(clockSkew)) &&
		e.StartedAt.Sub(job.RequestedAt) <= queries.InFlightWindow+clockSkew
}

// keptError says a result was kept (not stored, not dropped) for a reason trying again on the
// same database does not change.
type keptError struct{ msg string }

func (e *keptError) Error() string { return e.msg }

// isKept: the error is a result kept on purpose, not a database that did not answer.
func isKept(err error) bool {
	var k *keptError
	return errors.As(err, &k)
}

// restoreSpooled stores a result whose claim the database no longer holds under a finished job of
// its own, once: a result restored before is counted as already stored. One without a requested
// time cannot be told from another claim reliably and is kept.
func restoreSpooled(ctx context.Context, db queries.DBTX, e spoolEntry, source string, each time.Duration,
	log *slog.Logger) (already bool, err error) {
	if e.RequestedAt == nil {
		return false, &keptError{msg: fmt.Sprintf("the database holds no job %d of server %d claimed in round %d as this result's "+
			"(its claim vanished, as after a failover, and the id may be another claim's now), and the record predates "+
			"the requested time that would restore it safely: it is kept for a person to read", e.JobID, e.ServerID, e.RoundID)}
	}
	var prior int64
	err = retry(ctx, each, log, "read the restored job (replay)", func(ctx context.Context) error {
		prior, err = queries.RestoredJobOf(ctx, db, e.ServerID, e.JobID, *e.RequestedAt)
		return err
	})
	if err != nil {
		return false, err
	}
	if prior != 0 {
		return true, nil
	}
	var (
		out  queries.Restored
		gone bool
	)
	err = retry(ctx, each, log, "restore (replay)", func(ctx context.Context) error {
		var err error
		out, err = queries.RestoreRun(ctx, db, queries.RestoreParams{OriginalJobID: e.JobID, OriginalRoundID: e.RoundID,
			ServerID: e.ServerID, RequestedAt: *e.RequestedAt, Outcome: e.Outcome, Error: e.Error, StartedAt: e.StartedAt,
			CheckFinishedAt: e.CheckFinishedAt, Requests: e.Requests, Result: e.Result, Envelope: e.Envelope, Source: source})
		if errors.Is(err, queries.ErrServerGone) {
			gone = true
			return nil
		}
		return err
	})
	if gone {
		return false, &keptError{msg: fmt.Sprintf("its claim vanished and server %d is no longer in the database: kept for a person to read", e.ServerID)}
	}
	if restoredTwice(err) {
		return true, nil // another replay restored it meanwhile
	}
	if err != nil {
		return false, err
	}
	log.Warn("the database held no claim for this result (a failover lost it, or gave its id to another claim): "+
		"stored under a job of its own, marked restored", "original_job", e.JobID, "server", e.Slug,
		"round", e.RoundID, "job", out.JobID, "advanced", out.Advanced, "from", source)
	return false, nil
}

// restoredTwice: a concurrent restore of the same result won the unique key.
func restoredTwice(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" &&
		pgErr.ConstraintName == "probe_restored_jobs_original_key"
}

// claimStored says whether the claim p answers has its run, asking for the job by id, server and
// claim time: queries.ErrClaimGone when the database holds no such claim (it lost it in a
// failover, and the id may be another server's now).
func claimStored(ctx context.Context, db queries.DBTX, p queries.FinishParams) (bool, error) {
	job, found, err := queries.GetReplayedJob(ctx, db, p.JobID)
	if err != nil {
		return false, err
	}
	if !found || job.ServerID != p.ServerID || (p.RequestedAt != nil && !job.RequestedAt.Equal(*p.RequestedAt)) {
		return false, queries.ErrClaimGone
	}
	return job.Stored, nil
}
