package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schedule is how often the active release's rounds start; Every is 0 when it has no schedule.
// Version is the release's: only a worker of that version starts its rounds.
type Schedule struct {
	ReleaseID int64         `db:"release_id"`
	Version   string        `db:"version"`
	Every     time.Duration `db:"every"`
}

// SetReleaseEvery stores the schedule of release id (d > 0), in the transaction that records it.
func SetReleaseEvery(ctx context.Context, tx pgx.Tx, id int64, d time.Duration) error {
	if _, err := tx.Exec(ctx, SQL("SetReleaseEvery"), id, d); err != nil {
		return fmt.Errorf("store the schedule of release %d: %w", id, err)
	}
	return nil
}

// ActiveSchedule reads the active release's schedule; ErrNoRelease when no release is active.
func ActiveSchedule(ctx context.Context, db DBTX) (Schedule, error) {
	s, err := rowOf[Schedule](ctx, db, "ActiveSchedule")
	if errors.Is(err, pgx.ErrNoRows) {
		return Schedule{}, ErrNoRelease
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("read the active release's schedule: %w", err)
	}
	return s, nil
}

// LockSchedule serialises the start of scheduled rounds until tx ends.
func LockSchedule(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, SQL("LockSchedule")); err != nil {
		return fmt.Errorf("lock the schedule: %w", err)
	}
	return nil
}

// SinceScheduledRound is how long ago the last cron round started, by the database's clock; nil
// when none ever did.
func SinceScheduledRound(ctx context.Context, db DBTX) (*time.Duration, error) {
	since, err := valueOf[*time.Duration](ctx, db, "LastScheduledRound")
	if err != nil {
		return nil, fmt.Errorf("read the last scheduled round: %w", err)
	}
	return since, nil
}

// LiveInvocations counts invocation jobs that are queued, running or waiting for a retry; a job
// running on a worker that is dead (stopped, or silent for RoundDeadAfter, the rule rounds are
// judged by) is not counted: the schedule does not wait for it.
func LiveInvocations(ctx context.Context, db DBTX) (int, error) {
	n, err := valueOf[int](ctx, db, "LiveInvocations", RoundDeadAfter)
	if err != nil {
		return 0, fmt.Errorf("count queued invocations: %w", err)
	}
	return n, nil
}

// RoundsDone lists the open rounds whose queued invocations are all over.
func RoundsDone(ctx context.Context, db DBTX) ([]int64, error) {
	rows, err := db.Query(ctx, SQL("RoundsDone"))
	if err != nil {
		return nil, fmt.Errorf("find rounds whose invocations are done: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("find rounds whose invocations are done: %w", err)
	}
	return ids, nil
}

// RoundFinishedAt is when round id finished; nil while it runs.
func RoundFinishedAt(ctx context.Context, db DBTX, id int64) (*time.Time, error) {
	at, err := valueOf[*time.Time](ctx, db, "RoundFinishedAt", id)
	if err != nil {
		return nil, fmt.Errorf("read round %d: %w", id, err)
	}
	return at, nil
}
