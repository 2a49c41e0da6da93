package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/probe/settings"
)

// Release is one row of releases: the round settings a version ships and the ways back its plan
// approved.
type Release struct {
	ID      int64  `db:"id"`
	Version string `db:"version"`
	// Carried are the round settings the release ships, one column each.
	settings.Carried
	WaysBack       []string   `db:"ways_back"`
	Note           string     `db:"note"`
	DeployedAt     time.Time  `db:"deployed_at"`
	DeployedBy     string     `db:"deployed_by"`
	Active         bool       `db:"active"`
	Kind           string     `db:"kind"` // deploy | fanout-off
	PreviousID     *int64     `db:"previous_id"`
	DerivedFrom    *int64     `db:"derived_from"`
	RolledBackAt   *time.Time `db:"rolled_back_at"`
	RolledBackBy   *string    `db:"rolled_back_by"`
	RollbackReason *string    `db:"rollback_reason"`
}

// ReleaseEvent is one activation of a release: a deploy or a rollback, with who and why.
type ReleaseEvent struct {
	ID            int64     `db:"id"`
	ReleaseID     int64     `db:"release_id"`
	FromReleaseID *int64    `db:"from_release_id"`
	Action        string    `db:"action"` // deploy | to-previous | fanout-off
	Forced        bool      `db:"forced"`
	Actor         string    `db:"actor"`
	Reason        string    `db:"reason"`
	At            time.Time `db:"at"`
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
	return oneRelease(ctx, db, nil, true)
}

// ActiveReleaseForUpdate returns the active release and locks its row until the transaction ends.
func ActiveReleaseForUpdate(ctx context.Context, tx pgx.Tx) (Release, error) {
	id, err := valueOf[int64](ctx, tx, "LockActiveRelease")
	if errors.Is(err, pgx.ErrNoRows) {
		return Release{}, ErrNoRelease
	}
	if err != nil {
		return Release{}, fmt.Errorf("read release: %w", err)
	}
	return oneRelease(ctx, tx, &id, false)
}

// GetRelease returns the release with that id, or ErrNoRelease.
func GetRelease(ctx context.Context, db DBTX, id int64) (Release, error) {
	return oneRelease(ctx, db, &id, false)
}

// ListReleases returns up to limit releases, newest first.
func ListReleases(ctx context.Context, db DBTX, limit int) ([]Release, error) {
	out, err := rowsOf[Release](ctx, db, "Releases", nil, false, limit)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	return out, nil
}

func oneRelease(ctx context.Context, db DBTX, id *int64, active bool) (Release, error) {
	r, err := rowOf[Release](ctx, db, "Releases", id, active, 1)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNoRelease
	}
	if err != nil {
		return r, fmt.Errorf("read release: %w", err)
	}
	return r, nil
}

// InsertReleaseParams are the fields of a new release row.
type InsertReleaseParams struct {
	Version string
	settings.Carried
	WaysBack    []string
	Note        string
	DeployedBy  string
	Kind        string
	PreviousID  *int64
	DerivedFrom *int64
	Active      bool
	// Now, when set, stands in for now().
	Now *time.Time
}

// InsertRelease inserts a release row and returns its id.
func InsertRelease(ctx context.Context, tx pgx.Tx, p InsertReleaseParams) (int64, error) {
	waysBack := p.WaysBack
	if waysBack == nil {
		waysBack = []string{}
	}
	args := pgx.StrictNamedArgs{"version": p.Version, "ways_back": waysBack, "note": p.Note,
		"deployed_by": p.DeployedBy, "kind": p.Kind, "previous_id": p.PreviousID, "derived_from": p.DerivedFrom,
		"active": p.Active, "now": p.Now}
	for col, v := range p.Carried.Columns() {
		args[col] = v
	}
	id, err := valueOf[int64](ctx, tx, "InsertRelease", args)
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
	return execReleaseRow(ctx, tx, "mark release rolled back", SQL("MarkReleaseRolledBack"),
		pgx.StrictNamedArgs{"id": id, "by": by, "reason": reason, "now": now})
}

// InsertReleaseEvent records one activation and returns it with its id and time filled in.
func InsertReleaseEvent(ctx context.Context, tx pgx.Tx, e ReleaseEvent, now *time.Time) (ReleaseEvent, error) {
	stored, err := rowOf[ReleaseEvent](ctx, tx, "InsertReleaseEvent", pgx.StrictNamedArgs{"release_id": e.ReleaseID,
		"from_release_id": e.FromReleaseID, "action": e.Action, "forced": e.Forced, "actor": e.Actor,
		"reason": e.Reason, "now": now})
	if err != nil {
		return e, fmt.Errorf("record %s of release %d: %w", e.Action, e.ReleaseID, err)
	}
	return stored, nil
}

// LastActivation returns the event that last made the release active, or ErrNoRelease when it
// has none (a row written before release_events existed).
func LastActivation(ctx context.Context, db DBTX, releaseID int64) (ReleaseEvent, error) {
	e, err := rowOf[ReleaseEvent](ctx, db, "ReleaseEvents", releaseID, 1)
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
	out, err := rowsOf[ReleaseEvent](ctx, db, "ReleaseEvents", nil, limit)
	if err != nil {
		return nil, fmt.Errorf("list release events: %w", err)
	}
	return out, nil
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

// ReleaseSequences is where the id sequences of releases and release_events stand (nil: never
// used).
type ReleaseSequences struct {
	Releases *int64 `db:"releases"`
	Events   *int64 `db:"events"`
}

// ReadReleaseSequences reads them, under LockReleases.
func ReadReleaseSequences(ctx context.Context, tx pgx.Tx) (ReleaseSequences, error) {
	s, err := rowOf[ReleaseSequences](ctx, tx, "ReleaseSequences")
	if err != nil {
		return ReleaseSequences{}, fmt.Errorf("read the release sequences: %w", err)
	}
	return s, nil
}

// RestoreReleaseSequences puts them back where s says, under LockReleases: a dry run's inserts
// are rolled back, its use of the sequences is not.
func RestoreReleaseSequences(ctx context.Context, tx pgx.Tx, s ReleaseSequences) error {
	if _, err := tx.Exec(ctx, SQL("RestoreReleaseSequences"), s.Releases, s.Events); err != nil {
		return fmt.Errorf("restore the release sequences: %w", err)
	}
	return nil
}
