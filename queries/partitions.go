package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Partition is one partition of probe_jobs or probe_runs that maintenance made (or would make),
// with how many rows it moved there from the default partition; or one a prune dropped, which
// maintenance does not make again (PrunedAt set, nothing made).
type Partition struct {
	Parent    string    `db:"parent" json:"parent"`
	Table     string    `db:"table_name" json:"table"`
	RangeFrom time.Time `db:"range_from" json:"from"`
	RangeTo   time.Time `db:"range_to" json:"to"`
	MovedRows int64     `db:"moved_rows" json:"moved_rows"`
	// PrunedAt: the range was pruned then, and is kept pruned; ExportID is the export that holds
	// its runs (nil: pruned with --without-export).
	PrunedAt *time.Time `db:"pruned_at" json:"pruned_at,omitempty"`
	ExportID *int64     `db:"export_id" json:"export_id,omitempty"`
}

// MadeCount is how many of ps a maintenance made: a range a prune dropped is listed, not made again.
func MadeCount(ps []Partition) int {
	n := 0
	for _, p := range ps {
		if p.PrunedAt == nil {
			n++
		}
	}
	return n
}

// PartitionsAhead is how far ahead maintenance makes partitions: a week, so that a missed daily
// run (or six) never sends a finish to the default partition.
const PartitionsAhead = 7 * 24 * time.Hour

// PartitionLockTimeout is the longest one range of maintenance waits for a lock (the default
// partitions', the parents', servers' for the foreign keys) in one try: a finish queued behind it
// waits no longer. A try that times out is made again after PartitionLockPause, at most
// PartitionLockTries times.
const (
	PartitionLockTimeout = 100 * time.Millisecond
	PartitionLockPause   = 200 * time.Millisecond
	PartitionLockTries   = 50
)

// EnsurePartitions makes the partitions of every day (or week, by the retention setting) from
// from up to to that are missing, one range per statement (and so per transaction: its locks are
// held for that range only); with dryRun it only says which. A range a prune dropped is listed
// with PrunedAt and not made again. It is idempotent.
func EnsurePartitions(ctx context.Context, db DBTX, from, to time.Time, dryRun bool) ([]Partition, error) {
	var out []Partition
	for {
		made, err := ensureNextPartition(ctx, db, from, to, dryRun)
		if err != nil {
			return out, err
		}
		if len(made) == 0 {
			return out, nil
		}
		out = append(out, made...)
		from = made[0].RangeTo
	}
}

// ensureNextPartition makes the next missing range from from (one statement), tried again after
// PartitionLockPause while it gives up on its lock timeout, at most PartitionLockTries times.
func ensureNextPartition(ctx context.Context, db DBTX, from, to time.Time, dryRun bool) ([]Partition, error) {
	var made []Partition
	_, err := RetryLock(ctx, PartitionLockTries, PartitionLockPause, PartitionLockPause, func() error {
		var err error
		made, err = rowsOf[Partition](ctx, db, "EnsureNextPartition", pgx.StrictNamedArgs{"from": from, "to": to,
			"unit": nil, "dry_run": dryRun, "lock_timeout": PartitionLockTimeout})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("make partitions from %s: %w", from.UTC().Format(time.DateOnly), err)
	}
	return made, nil
}

// PrunableRange is a jobs partition and its runs partition, wholly before a prune's day.
type PrunableRange struct {
	// RangeFrom is nil for the legacy partition (everything before 00017).
	RangeFrom *time.Time `db:"range_from"`
	RangeTo   time.Time  `db:"range_to"`
	JobsTable string     `db:"jobs_table"`
	RunsTable string     `db:"runs_table"`
	Runs      int64      `db:"runs"`
	// ExportID: the newest export that covers the range; nil when none does.
	ExportID *int64 `db:"export_id"`
}

// PrunablePartitions lists the ranges wholly before before that are still stored, oldest first.
func PrunablePartitions(ctx context.Context, db DBTX, before time.Time) ([]PrunableRange, error) {
	out, err := rowsOf[PrunableRange](ctx, db, "PrunablePartitions", before)
	if err != nil {
		return nil, fmt.Errorf("list partitions before %s: %w", before.Format(time.DateOnly), err)
	}
	return out, nil
}

// BlockingJob is an open job, as prune names the one that refuses it.
type BlockingJob struct {
	JobID       int64     `db:"job_id"`
	Server      string    `db:"server"`
	RequestedAt time.Time `db:"requested_at"`
}

// OldestOpenJobBefore returns the oldest open job requested before t, or nil.
func OldestOpenJobBefore(ctx context.Context, db DBTX, t time.Time) (*BlockingJob, error) {
	j, err := rowOf[BlockingJob](ctx, db, "OldestOpenJobBefore", t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read open jobs: %w", err)
	}
	return &j, nil
}

// ErrRunAfterExport says a runs partition, once detached, held a run its export does not reach
// (stored after the export: a late run, a replayed spool); the detach was undone.
var ErrRunAfterExport = errors.New("the partition holds a run stored after its export")

// DetachPartition detaches table, waiting at most lockTimeout for the lock; false when it was
// detached already. A runs partition holding a run that export exportID (nil: none) does not
// reach stays attached, and the error wraps ErrRunAfterExport.
func DetachPartition(ctx context.Context, db DBTX, table string, lockTimeout time.Duration, exportID *int64) (bool, error) {
	var did bool
	if err := db.QueryRow(ctx, SQL("DetachPartition"), table, lockTimeout, exportID).Scan(&did); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "PRB01" {
			return false, fmt.Errorf("detach %s: %w: %s", table, ErrRunAfterExport, pgErr.Message)
		}
		return false, fmt.Errorf("detach %s: %w", table, err)
	}
	return did, nil
}

// DropPartition drops a detached partition and records it pruned with the export holding it.
func DropPartition(ctx context.Context, db DBTX, table string, exportID *int64, lockTimeout time.Duration) error {
	if _, err := db.Exec(ctx, SQL("DropPartition"), table, exportID, lockTimeout); err != nil {
		return fmt.Errorf("drop %s: %w", table, err)
	}
	return nil
}

// OldestKept returns where the kept runs begin once anything was pruned; nil when nothing was.
func OldestKept(ctx context.Context, db DBTX) (*time.Time, error) {
	t, err := valueOf[*time.Time](ctx, db, "OldestKept")
	if err != nil {
		return nil, fmt.Errorf("read the oldest kept partition: %w", err)
	}
	return t, nil
}

// PrunedRunPlace says where a pruned run went.
type PrunedRunPlace struct {
	Table     string     `db:"table_name" json:"partition"`
	RangeFrom *time.Time `db:"range_from" json:"from"`
	RangeTo   time.Time  `db:"range_to" json:"to"`
	DroppedAt time.Time  `db:"dropped_at" json:"pruned_at"`
	ExportID  *int64     `db:"export_id" json:"export_id"`
	Archive   *string    `db:"archive" json:"archive"`
}

// PrunedRun returns where run id went if a prune dropped it, or nil.
func PrunedRun(ctx context.Context, db DBTX, id int64) (*PrunedRunPlace, error) {
	p, err := rowOf[PrunedRunPlace](ctx, db, "PrunedRun", id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look for pruned run %d: %w", id, err)
	}
	return &p, nil
}

// Retention is the retention setting: how long runs are kept (nil: for ever, the default) and
// the span of a partition (day or week).
type Retention struct {
	Unit      string         `db:"partition_unit" json:"partition_unit"`
	Keep      *time.Duration `db:"keep" json:"-"`
	UpdatedBy *string        `db:"updated_by" json:"updated_by"`
	UpdatedAt *time.Time     `db:"updated_at" json:"updated_at"`
}

// SetRetentionUnit sets the span of the partitions made from then on, and leaves how long runs are
// kept as it is (in the same statement).
func SetRetentionUnit(ctx context.Context, db DBTX, unit, who string) (Retention, error) {
	r, err := rowOf[Retention](ctx, db, "SetRetentionUnit", unit, who)
	if err != nil {
		return Retention{}, fmt.Errorf("set the partition unit: %w", err)
	}
	return r, nil
}

// GetRetention reads the retention setting.
func GetRetention(ctx context.Context, db DBTX) (Retention, error) {
	r, err := rowOf[Retention](ctx, db, "GetRetention")
	if err != nil {
		return Retention{}, fmt.Errorf("read the retention setting: %w", err)
	}
	return r, nil
}

// SetRetention sets how long runs are kept (nil: for ever) and, when unit is not "", the span of
// the partitions made from then on.
func SetRetention(ctx context.Context, db DBTX, keep *time.Duration, unit, who string) (Retention, error) {
	var u *string
	if unit != "" {
		u = &unit
	}
	r, err := rowOf[Retention](ctx, db, "SetRetention", keep, u, who)
	if err != nil {
		return Retention{}, fmt.Errorf("set the retention: %w", err)
	}
	return r, nil
}
