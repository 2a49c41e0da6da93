package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReplayedJob is the job a spooled or journaled result names, as the database holds it now.
type ReplayedJob struct {
	JobID       int64     `db:"job_id"`
	ServerID    int64     `db:"server_id"`
	RoundID     *int64    `db:"round_id"`
	RequestedAt time.Time `db:"requested_at"`
	// Stored: the job has its run.
	Stored bool `db:"stored"`
}

// GetReplayedJob reads job jobID; found is false when the database holds no such job (its claim
// vanished with a failover, or was never there).
func GetReplayedJob(ctx context.Context, db DBTX, jobID int64) (job ReplayedJob, found bool, err error) {
	job, err = rowOf[ReplayedJob](ctx, db, "ReplayedJob", jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReplayedJob{}, false, nil
	}
	if err != nil {
		return ReplayedJob{}, false, fmt.Errorf("read job %d: %w", jobID, err)
	}
	return job, true, nil
}

// RestoreParams describe a result whose claim the database no longer holds: the claim it
// answered (job, round, server, requested time) and the observation.
type RestoreParams struct {
	OriginalJobID   int64
	OriginalRoundID int64 // 0: not known
	ServerID        int64
	RequestedAt     time.Time
	Outcome         string
	Error           string
	StartedAt       time.Time
	CheckFinishedAt time.Time
	Requests        int
	Result          json.RawMessage
	Envelope        json.RawMessage
	// Source is where the result was kept: spool | journal.
	Source string
}

// Restored says where a result whose claim had vanished is stored now.
type Restored struct {
	JobID int64 `db:"job_id"`
	RunID int64 `db:"run_id"`
	// Advanced: the server's next check time was moved on as the lost finish would have.
	Advanced bool `db:"advanced"`
}

// RestoredJobOf returns the job a result was restored under before, or 0 when it was not.
func RestoredJobOf(ctx context.Context, db DBTX, serverID, originalJobID int64, requestedAt time.Time) (int64, error) {
	id, err := valueOf[int64](ctx, db, "RestoredJob", pgx.NamedArgs{"server_id": serverID,
		"original_job_id": originalJobID, "original_requested_at": requestedAt})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read restored job of job %d: %w", originalJobID, err)
	}
	return id, nil
}

// ErrRoundGone says a round's row is not in the database: an asynchronous failover lost it.
var ErrRoundGone = errors.New("the database no longer holds this round (a failover lost it); its results are stored again from the spool and the journal")

// ErrServerGone: a restored result's server is no longer in the database.
var ErrServerGone = errors.New("its server is not in the database")

// RestoreRun stores a result whose claim vanished under a finished job of its own (see
// queries/restore.sql), in one transaction that holds the claim's lock exclusively: no claim
// takes a job id from the identity while the restore may move it on. db must be able to begin a
// transaction (a pool, a connection or a transaction).
func RestoreRun(ctx context.Context, db DBTX, p RestoreParams) (Restored, error) {
	b, ok := db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return Restored{}, fmt.Errorf("restore job %d: needs a database that begins transactions", p.OriginalJobID)
	}
	var round any
	if p.OriginalRoundID != 0 {
		round = p.OriginalRoundID
	}
	var out Restored
	err := InTx(ctx, b, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, SQL("ClaimLockExclusive"), ClaimLockKey); err != nil {
			return err
		}
		var err error
		out, err = rowOf[Restored](ctx, tx, "RestoreRun", pgx.NamedArgs{
			"original_job_id": p.OriginalJobID, "original_round_id": round, "server_id": p.ServerID,
			"requested_at": p.RequestedAt, "outcome": p.Outcome, "error": p.Error, "started_at": p.StartedAt,
			"check_finished_at": p.CheckFinishedAt, "requests": p.Requests, "result": jsonArg(p.Result),
			"envelope": jsonArg(p.Envelope), "source": p.Source})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrServerGone
		}
		return err
	})
	if err != nil {
		return Restored{}, fmt.Errorf("restore job %d: %w", p.OriginalJobID, err)
	}
	return out, nil
}

// Timeline is a PostgreSQL timeline probectl has seen the database on.
type Timeline struct {
	ID         int64     `db:"timeline_id"`
	PreviousID *int64    `db:"previous_timeline_id"`
	FirstSeen  time.Time `db:"first_seen_at"`
	// New: this call recorded it first.
	New bool `db:"new"`
}

// CurrentTimeline reads the timeline of the WAL the primary writes now (not on a standby).
func CurrentTimeline(ctx context.Context, db DBTX) (int64, error) {
	tl, err := valueOf[int64](ctx, db, "CurrentTimeline")
	if err != nil {
		return 0, fmt.Errorf("read the database's timeline: %w", err)
	}
	return tl, nil
}

// ObserveTimeline records that seenBy (host-pid) saw the database on timeline tl, unless someone
// did before, and returns the record.
func ObserveTimeline(ctx context.Context, db DBTX, tl int64, seenBy string) (Timeline, error) {
	out, err := rowOf[Timeline](ctx, db, "ObserveTimeline", pgx.NamedArgs{"timeline": tl, "seen_by": seenBy})
	if err != nil {
		return Timeline{}, fmt.Errorf("record timeline %d: %w", tl, err)
	}
	return out, nil
}
