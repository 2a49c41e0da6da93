package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WorkerBeat is what a worker process says of itself every heartbeat (probectl_workers, 00010).
type WorkerBeat struct {
	ID                 string
	Host               string
	PID                int
	Version            string
	MaxWorkers         int
	InvocationsRunning int
	SpoolFiles         int
	SpoolResults       int
	// SpoolSetAside counts the files of its spool directory set aside for a person to read
	// (spool files and failover journals, *.bad): 00030.
	SpoolSetAside int
}

// WorkerForgetAfter: a worker silent for this long is removed from probectl_workers.
const WorkerForgetAfter = 24 * time.Hour

// UpsertWorker records a worker's heartbeat.
func UpsertWorker(ctx context.Context, db DBTX, b WorkerBeat) error {
	if _, err := db.Exec(ctx, SQL("UpsertWorker"), pgx.StrictNamedArgs{"id": b.ID, "host": b.Host,
		"pid": b.PID, "version": b.Version, "max_workers": b.MaxWorkers,
		"invocations_running": b.InvocationsRunning, "spool_files": b.SpoolFiles,
		"spool_results": b.SpoolResults, "spool_set_aside": b.SpoolSetAside}); err != nil {
		return fmt.Errorf("heartbeat of worker %s: %w", b.ID, err)
	}
	return nil
}

// StopWorker records that worker id stopped cleanly.
func StopWorker(ctx context.Context, db DBTX, id string) error {
	if _, err := db.Exec(ctx, SQL("StopWorker"), id); err != nil {
		return fmt.Errorf("record the stop of worker %s: %w", id, err)
	}
	return nil
}

// ForgetStaleWorkers removes the workers silent for longer than WorkerForgetAfter.
func ForgetStaleWorkers(ctx context.Context, db DBTX) error {
	if _, err := db.Exec(ctx, SQL("ForgetStaleWorkers"), WorkerForgetAfter); err != nil {
		return fmt.Errorf("remove stale workers: %w", err)
	}
	return nil
}

// BeatWorkerRounds writes the heartbeat of the queued rounds whose invocations run here (ids) or
// still wait in the queue, and returns how many rounds it touched.
func BeatWorkerRounds(ctx context.Context, db DBTX, ids []int64) (int64, error) {
	tag, err := db.Exec(ctx, SQL("BeatWorkerRounds"), ids)
	if err != nil {
		return 0, fmt.Errorf("heartbeat of queued rounds: %w", err)
	}
	return tag.RowsAffected(), nil
}

// WorkerRow is one worker as status shows it.
type WorkerRow struct {
	ID                 string     `db:"id"`
	Host               string     `db:"host"`
	PID                int        `db:"pid"`
	Version            string     `db:"version"`
	MaxWorkers         int        `db:"max_workers"`
	StartedAt          time.Time  `db:"started_at"`
	HeartbeatAt        time.Time  `db:"heartbeat_at"`
	StoppedAt          *time.Time `db:"stopped_at"`
	InvocationsRunning int        `db:"invocations_running"`
	SpoolFiles         int        `db:"spool_files"`
	SpoolResults       int        `db:"spool_results"`
	SpoolSetAside      int        `db:"spool_set_aside"`
	Alive              bool       `db:"alive"`
}

// QueueCounts are probectl's invocations in River's queue.
type QueueCounts struct {
	Waiting   int `db:"waiting"`
	Running   int `db:"running"`
	Retrying  int `db:"retrying"`
	Retried   int `db:"retried"`
	Discarded int `db:"discarded"`
}

// WorkersShown bounds the workers status lists.
const WorkersShown = 100

// WorkerTableState says whether the workers' and River's tables are there, and whether the
// database is a standby (which cannot read River's UNLOGGED leader table).
type WorkerTableState struct {
	Exist   bool `db:"exist"`
	Standby bool `db:"standby"`
}

// WorkerTables reads the WorkerTableState.
func WorkerTables(ctx context.Context, db DBTX) (WorkerTableState, error) {
	rows, err := db.Query(ctx, SQL("WorkerTables"))
	if err != nil {
		return WorkerTableState{}, fmt.Errorf("look for the workers' tables: %w", err)
	}
	st, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[WorkerTableState])
	if err != nil {
		return WorkerTableState{}, fmt.Errorf("look for the workers' tables: %w", err)
	}
	return st, nil
}

// StatusLeader is the id of the worker River elected leader as of now; "" when none holds an
// unexpired term.
func StatusLeader(ctx context.Context, db DBTX, now time.Time) (string, error) {
	rows, err := db.Query(ctx, SQL("StatusLeader"), now)
	if err != nil {
		return "", fmt.Errorf("read river's leader: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// StatusWorkers lists the workers heard from within window of now: alive when their heartbeat is
// within deadAfter and they did not stop.
func StatusWorkers(ctx context.Context, db DBTX, now time.Time, deadAfter, window time.Duration) ([]WorkerRow, error) {
	rows, err := db.Query(ctx, SQL("StatusWorkers"), pgx.StrictNamedArgs{"now": now, "dead_after": deadAfter,
		"window": window, "limit": WorkersShown})
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WorkerRow])
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return out, nil
}

// StatusQueue counts probectl's invocations in River's queue; retried and discarded over window.
func StatusQueue(ctx context.Context, db DBTX, now time.Time, window time.Duration) (QueueCounts, error) {
	rows, err := db.Query(ctx, SQL("StatusQueue"), now, window)
	if err != nil {
		return QueueCounts{}, fmt.Errorf("count queued invocations: %w", err)
	}
	q, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[QueueCounts])
	if err != nil {
		return QueueCounts{}, fmt.Errorf("count queued invocations: %w", err)
	}
	return q, nil
}
