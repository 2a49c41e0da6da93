package queries

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditNow returns the transaction's start time (now()).
func AuditNow(ctx context.Context, db DBTX) (time.Time, error) {
	rows, err := db.Query(ctx, SQL("AuditNow"))
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	now, err := pgx.CollectOneRow(rows, pgx.RowTo[time.Time])
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}

// AuditTxModeRow says whether a transaction is READ ONLY, and whether all its statements see one
// snapshot (REPEATABLE READ or SERIALIZABLE).
type AuditTxModeRow struct {
	ReadOnly    bool `db:"read_only"`
	OneSnapshot bool `db:"one_snapshot"`
}

// AuditTxMode reads the mode of the transaction db runs in.
func AuditTxMode(ctx context.Context, db DBTX) (AuditTxModeRow, error) {
	rows, err := db.Query(ctx, SQL("AuditTxMode"))
	if err != nil {
		return AuditTxModeRow{}, fmt.Errorf("read the transaction's mode: %w", err)
	}
	m, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[AuditTxModeRow])
	if err != nil {
		return AuditTxModeRow{}, fmt.Errorf("read the transaction's mode: %w", err)
	}
	return m, nil
}

// AuditPlanSettings makes the rest of the transaction plan every statement with its parameters
// (never a generic plan) and without JIT compilation.
func AuditPlanSettings(ctx context.Context, db DBTX) error {
	if _, err := db.Exec(ctx, SQL("AuditPlanSettings")); err != nil {
		return fmt.Errorf("set the audit's planner settings: %w", err)
	}
	return nil
}

// AuditJobRow is one job of the duplicate audit's streaming pass.
type AuditJobRow struct {
	ServerID    int64     `db:"server_id"`
	RequestedAt time.Time `db:"requested_at"`
}

// AuditDuplicateScan streams every job requested in [from, until), in (server_id, requested_at)
// order, calling fn once per row; nothing is collected.
//
// This is the audits' one hot loop (a row per job of the population), so it does not read rows
// with pgx.RowToStructByName, which allocates per row: measured on 500,000 jobs, 88 bytes per job
// and a streamed scan 1.8x slower, where the audit promises memory that does not grow with the
// population. It checks the columns by name once, then reads every row into one reused row.
func AuditDuplicateScan(ctx context.Context, db DBTX, from, until time.Time, fn func(AuditJobRow) error) error {
	rows, err := db.Query(ctx, SQL("AuditDuplicateScan"), from, until)
	if err != nil {
		return fmt.Errorf("scan jobs: %w", err)
	}
	var r AuditJobRow
	if err := checkColumns(rows, "server_id", "requested_at"); err != nil {
		rows.Close()
		return fmt.Errorf("scan jobs: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&r.ServerID, &r.RequestedAt}, func() error { return fn(r) }); err != nil {
		return fmt.Errorf("scan jobs: %w", err)
	}
	return nil
}

// checkColumns fails unless rows has exactly the named columns, in that order.
func checkColumns(rows pgx.Rows, names ...string) error {
	fields := rows.FieldDescriptions()
	got := make([]string, len(fields))
	for i, f := range fields {
		got[i] = f.Name
	}
	if !slices.Equal(got, names) {
		return fmt.Errorf("columns %v, want %v", got, names)
	}
	return nil
}

// AuditPairRow is two consecutive jobs of one server.
type AuditPairRow struct {
	ServerID          int64      `db:"server_id"`
	Slug              string     `db:"slug"`
	FirstJobID        int64      `db:"first_job_id"`
	SecondJobID       int64      `db:"second_job_id"`
	FirstRequestedAt  time.Time  `db:"first_requested_at"`
	FirstFinishedAt   *time.Time `db:"first_finished_at"`
	SecondRequestedAt time.Time  `db:"second_requested_at"`
	SecondReason      string     `db:"second_reason"`
	// FailoverAt is when probectl first saw the timeline a failover started between the two
	// jobs, one of which was restored; nil for any other pair.
	FailoverAt *time.Time `db:"failover_at"`
}

// AuditPairsParams select the pairs AuditDuplicatePairs returns.
type AuditPairsParams struct {
	ServerIDs []int64
	// From is the earliest a first job may be requested.
	From time.Time
	// Since and Until bound the second job's request time: [Since, Until).
	Since, Until time.Time
	// MaxGap: only pairs requested less than MaxGap apart.
	MaxGap time.Duration
}

// AuditDuplicatePairs calls fn for every pair of consecutive jobs of the given servers closer than
// p.MaxGap, ordered by the second job's request time.
func AuditDuplicatePairs(ctx context.Context, db DBTX, p AuditPairsParams, fn func(AuditPairRow) error) error {
	if err := eachRow(ctx, db, "AuditDuplicatePairs", fn, pgx.StrictNamedArgs{"server_ids": p.ServerIDs,
		"from": p.From, "since": p.Since, "until": p.Until, "max_gap": p.MaxGap}); err != nil {
		return fmt.Errorf("read duplicate pairs: %w", err)
	}
	return nil
}

// AuditRateRow is one server's rounds and requests over an audit window.
type AuditRateRow struct {
	ServerID      int64         `db:"server_id"`
	Slug          string        `db:"slug"`
	Plan          string        `db:"plan"`
	CheckInterval time.Duration `db:"check_interval"`
	Rounds        int64         `db:"rounds"`
	Rechecks      int64         `db:"rechecks"`
	Requests      int64         `db:"requests"`
	MaxRequests   int           `db:"max_requests"`
	ShortGaps     int64         `db:"short_gaps"`
	// ClosestGap is nil when the server has one job and none before it within reach.
	ClosestGap *time.Duration `db:"closest_gap"`
}

// AuditRate calls fn once per server with a job requested in [since, until), in server order.
func AuditRate(ctx context.Context, db DBTX, since, until time.Time, fn func(AuditRateRow) error) error {
	if err := eachRow(ctx, db, "AuditRate", fn, since, until); err != nil {
		return fmt.Errorf("read request rates: %w", err)
	}
	return nil
}

// eachRow runs a named query and calls fn with each row, read by column name into a T, as it
// arrives: the audits stream populations far larger than memory should hold.
func eachRow[T any](ctx context.Context, db DBTX, name string, fn func(T) error, args ...any) error {
	rows, err := db.Query(ctx, SQL(name), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := pgx.RowToStructByName[T](rows)
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return rows.Err()
}
