package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Release is one row of releases: the round settings a version ships and the ways back its plan
// approved.
type Release struct {
	ID             int64
	Version        string
	Fanout         int
	ClaimLimit     int
	Concurrency    int
	MinSpacing     time.Duration
	RequestTimeout time.Duration
	MaxDuration    time.Duration
	FinishMode     string
	WaysBack       []string
	Note           string
	DeployedAt     time.Time
	DeployedBy     string
	Active         bool
	Kind           string // deploy | fanout-off
	PreviousID     *int64
	DerivedFrom    *int64
	RolledBackAt   *time.Time
	RolledBackBy   *string
	RollbackReason *string
}

// ReleaseEvent is one activation of a release: a deploy or a rollback, with who and why.
type ReleaseEvent struct {
	ID            int64
	ReleaseID     int64
	FromReleaseID *int64
	Action        string // deploy | to-previous | fanout-off
	Forced        bool
	Actor         string
	Reason        string
	At            time.Time
}

// ErrNoRelease says there is no release with that id, or no active release.
var ErrNoRelease = errors.New("no such release")

// LockReleases takes the transaction-level lock that serialises changes of the active release.
// Call it first in the transaction, in its own statement, before reading anything.
func LockReleases(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, SQL("LockReleases")); err != nil {
		return fmt.Errorf("lock releases: %w", err)
	}
	return nil
}

// ActiveRelease returns the active release, or ErrNoRelease.
func ActiveRelease(ctx context.Context, db DBTX) (Release, error) {
	return oneRelease(db.Query(ctx, SQL("ActiveRelease")))
}

// ActiveReleaseForUpdate returns the active release and locks its row until the transaction ends.
func ActiveReleaseForUpdate(ctx context.Context, tx pgx.Tx) (Release, error) {
	return oneRelease(tx.Query(ctx, SQL("ActiveReleaseForUpdate")))
}

// GetRelease returns the release with that id, or ErrNoRelease.
func GetRelease(ctx context.Context, db DBTX, id int64) (Release, error) {
	return oneRelease(db.Query(ctx, SQL("GetRelease"), id))
}

// ListReleases returns up to limit releases, newest first.
func ListReleases(ctx context.Context, db DBTX, limit int) ([]Release, error) {
	rows, err := db.Query(ctx, SQL("ListReleases"), limit)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRelease)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	return out, nil
}

// InsertReleaseParams are the fields of a new release row.
type InsertReleaseParams struct {
	Version                         string
	Fanout, ClaimLimit, Concurrency int
	MinSpacing                      time.Duration
	RequestTimeout                  time.Duration
	MaxDuration                     time.Duration
	FinishMode                      string
	WaysBack                        []string
	Note                            string
	DeployedBy                      string
	Kind                            string
	PreviousID                      *int64
	DerivedFrom                     *int64
	Active                          bool
	// Now, when set, stands in for now().
	Now *time.Time
}

// InsertRelease inserts a release row and returns its id.
func InsertRelease(ctx context.Context, tx pgx.Tx, p InsertReleaseParams) (int64, error) {
	waysBack := p.WaysBack
	if waysBack == nil {
		waysBack = []string{}
	}
	var id int64
	err := tx.QueryRow(ctx, SQL("InsertRelease"), p.Version, p.Fanout, p.ClaimLimit, p.Concurrency,
		p.MinSpacing.Seconds(), p.FinishMode, waysBack, p.Note, p.DeployedBy, p.Kind, p.PreviousID,
		p.DerivedFrom, p.Active, p.Now, p.RequestTimeout.Seconds(), p.MaxDuration.Seconds()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert release %s: %w", p.Version, err)
	}
	return id, nil
}

// DeactivateRelease clears the active flag of a release.
func DeactivateRelease(ctx context.Context, tx pgx.Tx, id int64) error {
	return execReleaseRow(ctx, tx, "deactivate release", SQL("DeactivateRelease"), id)
}

// ActivateRelease sets the active flag of an inactive release.
func ActivateRelease(ctx context.Context, tx pgx.Tx, id int64) error {
	return execReleaseRow(ctx, tx, "activate release", SQL("ActivateRelease"), id)
}

// MarkReleaseRolledBack records on the release the latest rollback away from it.
func MarkReleaseRolledBack(ctx context.Context, tx pgx.Tx, id int64, by, reason string, now *time.Time) error {
	return execReleaseRow(ctx, tx, "mark release rolled back", SQL("MarkReleaseRolledBack"), id, by, reason, now)
}

// InsertReleaseEvent records one activation and returns it with its id and time filled in.
func InsertReleaseEvent(ctx context.Context, tx pgx.Tx, e ReleaseEvent, now *time.Time) (ReleaseEvent, error) {
	err := tx.QueryRow(ctx, SQL("InsertReleaseEvent"), e.ReleaseID, e.FromReleaseID, e.Action, e.Forced,
		e.Actor, e.Reason, now).Scan(&e.ID, &e.At)
	if err != nil {
		return e, fmt.Errorf("record %s of release %d: %w", e.Action, e.ReleaseID, err)
	}
	return e, nil
}

// LastActivation returns the event that last made the release active, or ErrNoRelease when it
// has none (a row written before release_events existed).
func LastActivation(ctx context.Context, db DBTX, releaseID int64) (ReleaseEvent, error) {
	rows, err := db.Query(ctx, SQL("LastActivation"), releaseID)
	if err != nil {
		return ReleaseEvent{}, fmt.Errorf("read activation of release %d: %w", releaseID, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanReleaseEvent)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, ErrNoRelease
	}
	if err != nil {
		return e, fmt.Errorf("read activation of release %d: %w", releaseID, err)
	}
	return e, nil
}

// ListReleaseEvents returns up to limit events, newest first.
func ListReleaseEvents(ctx context.Context, db DBTX, limit int) ([]ReleaseEvent, error) {
	rows, err := db.Query(ctx, SQL("ListReleaseEvents"), limit)
	if err != nil {
		return nil, fmt.Errorf("list release events: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReleaseEvent)
	if err != nil {
		return nil, fmt.Errorf("list release events: %w", err)
	}
	return out, nil
}

func oneRelease(rows pgx.Rows, err error) (Release, error) {
	if err != nil {
		return Release{}, fmt.Errorf("read release: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRelease)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNoRelease
	}
	if err != nil {
		return r, fmt.Errorf("read release: %w", err)
	}
	return r, nil
}

func scanRelease(row pgx.CollectableRow) (Release, error) {
	var r Release
	var spacing, timeout, budget float64
	err := row.Scan(&r.ID, &r.Version, &r.Fanout, &r.ClaimLimit, &r.Concurrency, &spacing, &r.FinishMode,
		&r.WaysBack, &r.Note, &r.DeployedAt, &r.DeployedBy, &r.Active, &r.Kind, &r.PreviousID, &r.DerivedFrom,
		&r.RolledBackAt, &r.RolledBackBy, &r.RollbackReason, &timeout, &budget)
	r.MinSpacing = intervalSeconds(spacing)
	r.RequestTimeout = intervalSeconds(timeout)
	r.MaxDuration = intervalSeconds(budget)
	return r, err
}

// intervalSeconds turns an interval read as epoch seconds back into a duration, rounded to the
// microsecond PostgreSQL keeps.
func intervalSeconds(s float64) time.Duration {
	return (time.Duration(s*1e6+0.5) * time.Microsecond)
}

func scanReleaseEvent(row pgx.CollectableRow) (ReleaseEvent, error) {
	var e ReleaseEvent
	err := row.Scan(&e.ID, &e.ReleaseID, &e.FromReleaseID, &e.Action, &e.Forced, &e.Actor, &e.Reason, &e.At)
	return e, err
}

// execReleaseRow runs a statement that must change exactly one row.
func execReleaseRow(ctx context.Context, db DBTX, what, sql string, args ...any) error {
	tag, err := db.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%s: changed %d rows, want 1", what, tag.RowsAffected())
	}
	return nil
}
