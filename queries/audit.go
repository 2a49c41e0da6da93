package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditNow returns the transaction's start time (now()).
func AuditNow(ctx context.Context, db DBTX) (time.Time, error) {
	var now time.Time
	if err := db.QueryRow(ctx, SQL("AuditNow")).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return now, nil
}

// AuditTxMode says whether the transaction db runs in is READ ONLY, and whether all its
// statements see one snapshot (REPEATABLE READ or SERIALIZABLE).
func AuditTxMode(ctx context.Context, db DBTX) (readOnly, oneSnapshot bool, err error) {
	if err := db.QueryRow(ctx, SQL("AuditTxMode")).Scan(&readOnly, &oneSnapshot); err != nil {
		return false, false, fmt.Errorf("read the transaction's mode: %w", err)
	}
	return readOnly, oneSnapshot, nil
}

// AuditPlanSettings makes the rest of the transaction plan every statement with its parameters
// (never a generic plan) and without JIT compilation.
func AuditPlanSettings(ctx context.Context, db DBTX) error {
	if _, err := db.Exec(ctx, SQL("AuditPlanSettings")); err != nil {
		return fmt.Errorf("set the audit's planner settings: %w", err)
	}
	return nil
}

// AuditDuplicateScan streams (server id, requested at) of every job requested in [from, until),
// in (server_id, requested_at) order, calling fn once per row; nothing is collected.
func AuditDuplicateScan(ctx context.Context, db DBTX, from, until time.Time,
	fn func(serverID int64, requestedAt time.Time) error) error {
	rows, err := db.Query(ctx, SQL("AuditDuplicateScan"), from, until)
	if err != nil {
		return fmt.Errorf("scan jobs: %w", err)
	}
	var (
		serverID    int64
		requestedAt time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&serverID, &requestedAt}, func() error {
		return fn(serverID, requestedAt)
	})
	if err != nil {
		return fmt.Errorf("scan jobs: %w", err)
	}
	return nil
}

// AuditPairRow is two consecutive jobs of one server.
type AuditPairRow struct {
	ServerID          int64
	Slug              string
	FirstJobID        int64
	SecondJobID       int64
	FirstRequestedAt  time.Time
	FirstFinishedAt   *time.Time
	SecondRequestedAt time.Time
	SecondReason      string
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
	rows, err := db.Query(ctx, SQL("AuditDuplicatePairs"), p.ServerIDs, p.From, p.Since, p.Until, p.MaxGap)
	if err != nil {
		return fmt.Errorf("read duplicate pairs: %w", err)
	}
	var r AuditPairRow
	_, err = pgx.ForEachRow(rows, []any{&r.ServerID, &r.Slug, &r.FirstJobID, &r.SecondJobID,
		&r.FirstRequestedAt, &r.FirstFinishedAt, &r.SecondRequestedAt, &r.SecondReason}, func() error {
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("read duplicate pairs: %w", err)
	}
	return nil
}

// AuditRateRow is one server's rounds and requests over an audit window.
type AuditRateRow struct {
	ServerID      int64
	Slug          string
	Plan          string
	CheckInterval time.Duration
	Rounds        int64
	Rechecks      int64
	Requests      int64
	MaxRequests   int
	ShortGaps     int64
	// ClosestGap is nil when the server has one job and none before it within reach.
	ClosestGap *time.Duration
}

// AuditRate calls fn once per server with a job requested in [since, until), in server order.
func AuditRate(ctx context.Context, db DBTX, since, until time.Time, fn func(AuditRateRow) error) error {
	rows, err := db.Query(ctx, SQL("AuditRate"), since, until)
	if err != nil {
		return fmt.Errorf("read request rates: %w", err)
	}
	var (
		r              AuditRateRow
		interval       float64
		closestSeconds *float64
	)
	_, err = pgx.ForEachRow(rows, []any{&r.ServerID, &r.Slug, &r.Plan, &interval, &r.Rounds, &r.Rechecks,
		&r.Requests, &r.MaxRequests, &r.ShortGaps, &closestSeconds}, func() error {
		row := r
		row.CheckInterval = seconds(interval)
		if closestSeconds != nil {
			d := seconds(*closestSeconds)
			row.ClosestGap = &d
		}
		return fn(row)
	})
	if err != nil {
		return fmt.Errorf("read request rates: %w", err)
	}
	return nil
}

// AuditOpenJobRow is a job with no finish time.
type AuditOpenJobRow struct {
	JobID        int64
	ServerID     int64
	Slug         string
	RoundID      *int64
	RoundTrigger *string
	RoundVersion *string
	Invocation   *int32
	Reason       string
	RequestedAt  time.Time
}

// AuditOpenJobs calls fn for every open job, oldest first.
func AuditOpenJobs(ctx context.Context, db DBTX, fn func(AuditOpenJobRow) error) error {
	rows, err := db.Query(ctx, SQL("AuditOpenJobs"))
	if err != nil {
		return fmt.Errorf("read open jobs: %w", err)
	}
	var r AuditOpenJobRow
	_, err = pgx.ForEachRow(rows, []any{&r.JobID, &r.ServerID, &r.Slug, &r.RoundID, &r.RoundTrigger,
		&r.RoundVersion, &r.Invocation, &r.Reason, &r.RequestedAt}, func() error {
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("read open jobs: %w", err)
	}
	return nil
}

// seconds converts seconds from extract(epoch ...) to a Duration, rounded to the microsecond
// PostgreSQL stores.
func seconds(s float64) time.Duration {
	return (time.Duration(s*1e6+copysignHalf(s)) * time.Microsecond)
}

func copysignHalf(s float64) float64 {
	if s < 0 {
		return -0.5
	}
	return 0.5
}
