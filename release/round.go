package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// VersionMismatchError says the active release is another version than the running binary: a
// worker that was not rolled back (or not yet deployed) must not keep probing with its own code.
type VersionMismatchError struct {
	Active Release
	Binary string
}

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("release #%d (version %s) is active but this probectl is version %s: run probectl %s",
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

// Override is a carried setting whose flag was given and differs from the active release's
// value (probe/settings: Resolve).
type Override = settings.Override

// RoundRequest is what `run round` (or a worker's tick) knows before it asks the release: its own
// version, the settings its flags give, and which flags were set on the command line.
type RoundRequest struct {
	BinaryVersion string
	IgnoreVersion bool
	Flags         settings.Settings
	// Changed says whether the caller set a setting (a flag on the command line; nil: none).
	Changed func(settings.Setting) bool
	// Bounds checks the field table's bounds on the flags and on what the release ships (run
	// round); a worker's tick and the demo's incident replay leave them out.
	Bounds bool
}

// SettingsForRound is the whole decision a round makes at its start: refuse a binary that is not
// the active release's version (see ForRound), then make the round's settings from the release
// and the flags, checked once (settings.Resolve).
func SettingsForRound(ctx context.Context, db queries.DBTX, req RoundRequest) (settings.Settings, []Override, error) {
	rel, err := ForRound(ctx, db, req.BinaryVersion, req.IgnoreVersion)
	if err != nil {
		return req.Flags, nil, err
	}
	var from *settings.Release
	if rel != nil {
		from = &settings.Release{ID: rel.ID, Carried: rel.Carried}
	}
	return settings.Resolve(settings.Request{Release: from, Flags: req.Flags, Changed: req.Changed, Bounds: req.Bounds})
}
