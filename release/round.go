package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe"
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

// Override is a round setting the caller set that differs from the active release's value; the
// round's summary shows it (with the flag that set it: the command knows its flags).
type Override struct {
	Setting probe.Setting
	// Release and Round are the release's value and the one the round ran with, as text.
	Release string
	Round   string
}

// roundSetting is a round setting whose default comes from the active release: its name, its
// value as the round's summary shows it, and how a value the caller set is laid over the
// release's. One table, so that a setting cannot be reported as an override and not applied.
type roundSetting struct {
	name probe.Setting
	get  func(s probe.Settings) string
	copy func(dst *probe.Settings, src probe.Settings)
}

var roundSettings = []roundSetting{
	{probe.SettingFanout, func(s probe.Settings) string { return fmt.Sprint(s.Fanout) },
		func(dst *probe.Settings, src probe.Settings) { dst.Fanout = src.Fanout }},
	{probe.SettingClaimLimit, func(s probe.Settings) string { return fmt.Sprint(s.ClaimLimit) },
		func(dst *probe.Settings, src probe.Settings) { dst.ClaimLimit = src.ClaimLimit }},
	{probe.SettingConcurrency, func(s probe.Settings) string { return fmt.Sprint(s.Concurrency) },
		func(dst *probe.Settings, src probe.Settings) { dst.Concurrency = src.Concurrency }},
	{probe.SettingMinSpacing, func(s probe.Settings) string { return s.MinSpacing.String() },
		func(dst *probe.Settings, src probe.Settings) { dst.MinSpacing = src.MinSpacing }},
	{probe.SettingRequestTimeout, func(s probe.Settings) string { return s.RequestTimeout.String() },
		func(dst *probe.Settings, src probe.Settings) { dst.RequestTimeout = src.RequestTimeout }},
	{probe.SettingMaxDuration, func(s probe.Settings) string { return s.MaxDuration.String() },
		func(dst *probe.Settings, src probe.Settings) { dst.MaxDuration = src.MaxDuration }},
	{probe.SettingFinish, func(s probe.Settings) string { return s.Finish },
		func(dst *probe.Settings, src probe.Settings) { dst.Finish = src.Finish }},
}

// ReleaseSettings are the round settings whose defaults come from the active release.
var ReleaseSettings = func() []probe.Setting {
	names := make([]probe.Setting, 0, len(roundSettings))
	for _, f := range roundSettings {
		names = append(names, f.name)
	}
	return names
}()

// RoundSettings lays the release under the round's settings as the caller gave them (flags): a
// setting the caller set (changed says which: a flag given on the command line) keeps its value
// and, when it differs from the release's, is listed as an override; every other setting comes
// from the release, and the round records the release's id. With no release the flags are used as
// given.
func RoundSettings(rel *Release, flags probe.Settings, changed func(probe.Setting) bool) (probe.Settings, []Override) {
	if rel == nil {
		return flags, nil
	}
	out := SettingsOf(*rel).Apply(flags)
	id := rel.ID
	out.ReleaseID = &id
	var overrides []Override
	for _, f := range roundSettings {
		if !changed(f.name) {
			continue
		}
		from, to := f.get(out), f.get(flags)
		f.copy(&out, flags)
		if from != to {
			overrides = append(overrides, Override{Setting: f.name, Release: from, Round: to})
		}
	}
	return out, overrides
}

// RoundRequest is what `run round` knows before it asks the release: its own version and the
// settings its flags give, and which flags were set on the command line.
type RoundRequest struct {
	BinaryVersion string
	IgnoreVersion bool
	Flags         probe.Settings
	// Changed says whether the caller set a setting (a flag on the command line; nil: none).
	Changed func(probe.Setting) bool
}

// SettingsForRound is the whole decision `run round` makes at the start of a round: refuse a
// binary that is not the active release's version (see ForRound), lay the release under the flags
// (see RoundSettings), and check the result as any round's settings are checked, lease included.
func SettingsForRound(ctx context.Context, db queries.DBTX, req RoundRequest) (probe.Settings, []Override, error) {
	rel, err := ForRound(ctx, db, req.BinaryVersion, req.IgnoreVersion)
	if err != nil {
		return req.Flags, nil, err
	}
	changed := req.Changed
	if changed == nil {
		changed = func(probe.Setting) bool { return false }
	}
	s, overrides := RoundSettings(rel, req.Flags, changed)
	if err := s.Validate(); err != nil {
		return s, nil, err
	}
	return s, overrides, nil
}
