package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/queries"
)

// The bounds of every round setting a person can ask for, at `run round` and `deploy record`
// alike. They are the commands' rules, not probe.Settings': the incident replay runs the old
// settings (a spacing of 0) on its own throwaway database.
const (
	MaxRequestTimeout = time.Minute
	MaxMaxDuration    = 14 * time.Minute
	// MinMinSpacing is the promise to operators: no server is checked twice within 10 minutes
	// (maintainer re-checks keep their explicit exception in the claim).
	MinMinSpacing  = 10 * time.Minute
	MaxMinSpacing  = 7 * 24 * time.Hour
	MaxFanout      = 1000
	MaxClaimLimit  = 10000
	MaxConcurrency = 10000
	// MaxMaxBody bounds the cap on each response body a check reads (run round and check's
	// --max-body): a check holds a body while the SDK decodes it, several at once per process.
	MaxMaxBody = 8 << 20
	// MaxVerifyWait bounds `deploy verify --wait`.
	MaxVerifyWait = 24 * time.Hour
)

// bound is one setting's bound: the setting, whether a value is inside it, and how to say it.
type bound struct {
	setting probe.Setting
	value   func(probe.Settings) string
	in      func(probe.Settings) bool
	say     string
}

var bounds = []bound{
	{probe.SettingRequestTimeout, func(s probe.Settings) string { return s.RequestTimeout.String() },
		func(s probe.Settings) bool { return s.RequestTimeout <= MaxRequestTimeout }, "at most 1m"},
	{probe.SettingMaxDuration, func(s probe.Settings) string { return s.MaxDuration.String() },
		func(s probe.Settings) bool { return s.MaxDuration <= MaxMaxDuration }, "at most 14m"},
	{probe.SettingMinSpacing, func(s probe.Settings) string { return s.MinSpacing.String() },
		func(s probe.Settings) bool { return s.MinSpacing >= MinMinSpacing && s.MinSpacing <= MaxMinSpacing },
		"between 10m (no server is checked twice within 10 minutes) and 7d"},
	{probe.SettingFanout, func(s probe.Settings) string { return fmt.Sprint(s.Fanout) },
		func(s probe.Settings) bool { return s.Fanout <= MaxFanout }, "at most 1000"},
	{probe.SettingClaimLimit, func(s probe.Settings) string { return fmt.Sprint(s.ClaimLimit) },
		func(s probe.Settings) bool { return s.ClaimLimit <= MaxClaimLimit }, "at most 10000"},
	{probe.SettingConcurrency, func(s probe.Settings) string { return fmt.Sprint(s.Concurrency) },
		func(s probe.Settings) bool { return s.Concurrency <= MaxConcurrency }, "at most 10000"},
	{probe.SettingMaxBody, func(s probe.Settings) string { return fmt.Sprint(s.MaxBodyBytes) },
		func(s probe.Settings) bool { return s.MaxBodyBytes <= MaxMaxBody }, "at most 8388608 (8 MiB)"},
}

// CheckBounds refuses settings outside the bounds above, each error naming its setting and its
// bound (a *probe.SettingsError: exit 2).
func CheckBounds(s probe.Settings) error {
	var errs []error
	for _, b := range bounds {
		if !b.in(s) {
			errs = append(errs, probe.NewSettingsError(b.setting, "%s is out of bounds: must be %s", b.value(s), b.say))
		}
	}
	return errors.Join(errs...)
}

// SettingsForRunRound is SettingsForRound for `run round`: the flags within bounds first, then the
// settings the round would run with; a setting out of bounds that came from the active release
// (no flag overrode it) is refused naming the release, so that no release can switch the spacing
// promise off.
func SettingsForRunRound(ctx context.Context, db queries.DBTX, req RoundRequest) (probe.Settings, []Override, error) {
	if err := CheckBounds(req.Flags); err != nil {
		return req.Flags, nil, err
	}
	s, overrides, err := SettingsForRound(ctx, db, req)
	if err != nil || s.ReleaseID == nil {
		return s, overrides, err
	}
	var errs []error
	for _, b := range bounds {
		if !b.in(s) {
			e := probe.NewSettingsError(b.setting, "the active release ships %s %s, out of bounds: must be %s; "+
				"record a release within bounds (probectl deploy record) or pass %s", b.setting, b.value(s), b.say, b.setting)
			e.Subject = fmt.Sprintf("release #%d", *s.ReleaseID)
			errs = append(errs, e)
		}
	}
	return s, overrides, errors.Join(errs...)
}
