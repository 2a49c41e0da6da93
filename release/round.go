package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/queries"
)

// VersionMismatchError says the active release is another version than the running binary: a
// worker that was not rolled back (or not yet deployed) must not keep probing with its own code.
type VersionMismatchError struct {
	Active Release
	Binary string
}

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("release #%d (version %s) is active but this probectl is version %s: "+
		"run probectl %s, or pass --ignore-version if you really mean to probe with this binary",
		e.Active.ID, e.Active.Version, e.Binary, e.Active.Version)
}

// ExitCode: the round could not be run.
func (e *VersionMismatchError) ExitCode() int { return exit.Unavailable }

// ForRound returns the release a round runs under: its settings are the round's defaults and its
// id goes on the round's row. It is nil when no release was ever recorded (the round then runs on
// the binary's defaults). When the active release is another version than binaryVersion, it
// refuses with a *VersionMismatchError unless ignoreVersion.
//
// It is read at the start of every round, so the round after a rollback runs with the rolled-back
// settings.
func ForRound(ctx context.Context, db queries.DBTX, binaryVersion string, ignoreVersion bool) (*Release, error) {
	r, err := queries.ActiveRelease(ctx, db)
	if errors.Is(err, queries.ErrNoRelease) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the active release: %w", err)
	}
	if r.Version != binaryVersion && !ignoreVersion {
		return nil, &VersionMismatchError{Active: r, Binary: binaryVersion}
	}
	return &r, nil
}
