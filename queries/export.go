package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ExportedRun is one run as an archive keeps it.
type ExportedRun struct {
	RunID       int64           `db:"run_id"`
	JobID       int64           `db:"job_id"`
	RoundID     *int64          `db:"round_id"`
	Server      string          `db:"server"`
	EndpointURL string          `db:"endpoint_url"`
	Kind        string          `db:"kind"`
	RequestedAt time.Time       `db:"requested_at"`
	StartedAt   time.Time       `db:"started_at"`
	FinishedAt  time.Time       `db:"finished_at"`
	JobOutcome  *string         `db:"job_outcome"`
	Late        bool            `db:"late"`
	Requests    int             `db:"requests"`
	Result      json.RawMessage `db:"result"`
	Envelope    json.RawMessage `db:"envelope"`
}

// EachExportedRun calls fn for every run of the jobs requested in [after, before) (after nil: from
// the first), in id order, streaming: the runs are never all in memory.
func EachExportedRun(ctx context.Context, db DBTX, before time.Time, after *time.Time, fn func(ExportedRun) error) error {
	rows, err := db.Query(ctx, SQL("ExportRuns"), before, after)
	if err != nil {
		return fmt.Errorf("read runs to export: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := pgx.RowToStructByName[ExportedRun](rows)
		if err != nil {
			return fmt.Errorf("read runs to export: %w", err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read runs to export: %w", err)
	}
	return nil
}

// Export is one row of probe_run_exports: an archive written, and what it holds.
type Export struct {
	ID         int64      `db:"id" json:"id"`
	FileName   string     `db:"file_name" json:"file"`
	Before     time.Time  `db:"before" json:"before"`
	RangeFrom  *time.Time `db:"range_from" json:"from"`
	Runs       int64      `db:"runs" json:"runs"`
	FirstAt    *time.Time `db:"first_at" json:"first_at"`
	LastAt     *time.Time `db:"last_at" json:"last_at"`
	MaxRunID   *int64     `db:"max_run_id" json:"max_run_id"`
	SHA256     string     `db:"sha256" json:"sha256"`
	ExportedBy string     `db:"exported_by" json:"exported_by"`
	ExportedAt time.Time  `db:"exported_at" json:"exported_at"`
}

// RecordExport stores e (its ID and ExportedAt are set from the database).
func RecordExport(ctx context.Context, db DBTX, e *Export) error {
	if err := db.QueryRow(ctx, SQL("RecordExport"), pgx.StrictNamedArgs{"file_name": e.FileName,
		"before": e.Before, "range_from": e.RangeFrom, "runs": e.Runs, "first_at": e.FirstAt,
		"last_at": e.LastAt, "max_run_id": e.MaxRunID, "sha256": e.SHA256,
		"exported_by": e.ExportedBy}).Scan(&e.ID, &e.ExportedAt); err != nil {
		return fmt.Errorf("record export %s: %w", e.FileName, err)
	}
	return nil
}

// RunIDsDrawn returns the last run id handed out so far (0: none).
func RunIDsDrawn(ctx context.Context, db DBTX) (int64, error) {
	n, err := valueOf[int64](ctx, db, "RunIDsDrawn")
	if err != nil {
		return 0, fmt.Errorf("read the run ids drawn: %w", err)
	}
	return n, nil
}

// OpenTransactions returns the other client transactions of the database running now, by
// virtual transaction id.
func OpenTransactions(ctx context.Context, db DBTX) ([]string, error) {
	out, err := scalars[string](ctx, db, "OpenTransactions")
	if err != nil {
		return nil, fmt.Errorf("read the open transactions: %w", err)
	}
	return out, nil
}

// TransactionsStillOpen returns which of the virtual transactions ids are still running.
func TransactionsStillOpen(ctx context.Context, db DBTX, ids []string) ([]string, error) {
	out, err := scalars[string](ctx, db, "TransactionsStillOpen", ids)
	if err != nil {
		return nil, fmt.Errorf("read the open transactions: %w", err)
	}
	return out, nil
}

// scalars runs a named query of one column and collects its values.
func scalars[T any](ctx context.Context, db DBTX, name string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, SQL(name), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[T])
}
