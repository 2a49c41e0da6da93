package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/probectl/probectl/queries"
)

// Setting names a policy setting in a *SettingError; the command says it as its flag.
type Setting string

// The policy's settings.
const (
	SettingDownAfter   Setting = "down_after"
	SettingUpAfter     Setting = "up_after"
	SettingStormShare  Setting = "storm_share"
	SettingStormMin    Setting = "storm_min"
	SettingResendEvery Setting = "resend_every"
)

// The policy's bounds (the table's checks say the same).
const (
	MaxAfter       = 100
	MaxStormShare  = 100
	MaxStormMin    = 100000
	MinResendEvery = time.Second
	MaxResendEvery = time.Hour
)

// DefaultPolicy is the policy a new database starts with: alert_policy's column defaults
// (queries/migrations/00016_alerts.sql), said once for the commands that show them.
func DefaultPolicy() queries.AlertPolicy {
	return queries.AlertPolicy{DownAfter: 2, UpAfter: 1, StormShare: 50, StormMin: 10, ResendEvery: time.Minute}
}

// SettingError is bad input: a setting out of its bounds, or a receiver field that is wrong.
type SettingError struct {
	Setting Setting
	Msg     string
}

func (e *SettingError) Error() string { return fmt.Sprintf("%s: %s", e.Setting, e.Msg) }

func settingErr(s Setting, format string, args ...any) error {
	return &SettingError{Setting: s, Msg: fmt.Sprintf(format, args...)}
}

// PolicyChange is what `alerts policy set` changes; nil leaves a setting as it is.
type PolicyChange struct {
	DownAfter, UpAfter, StormShare, StormMin *int
	ResendEvery                              *time.Duration
	By                                       string
}

// Validate checks the policy's bounds.
func Validate(p queries.AlertPolicy) error {
	switch {
	case p.DownAfter < 1 || p.DownAfter > MaxAfter:
		return settingErr(SettingDownAfter, "must be 1 to %d, got %d", MaxAfter, p.DownAfter)
	case p.UpAfter < 1 || p.UpAfter > MaxAfter:
		return settingErr(SettingUpAfter, "must be 1 to %d, got %d", MaxAfter, p.UpAfter)
	case p.StormShare < 1 || p.StormShare > MaxStormShare:
		return settingErr(SettingStormShare, "must be 1 to %d (per cent), got %d", MaxStormShare, p.StormShare)
	case p.StormMin < 1 || p.StormMin > MaxStormMin:
		return settingErr(SettingStormMin, "must be 1 to %d, got %d", MaxStormMin, p.StormMin)
	case p.ResendEvery < MinResendEvery || p.ResendEvery > MaxResendEvery:
		return settingErr(SettingResendEvery, "must be %s to %s, got %s", MinResendEvery, MaxResendEvery, p.ResendEvery)
	}
	return nil
}

// CheckChange judges the settings a change gives by the policy's bounds, without a database: a
// command calls it before it connects, so that bad input exits 2 whether or not the database
// answers. SetPolicy judges the whole policy again.
func CheckChange(c PolicyChange) error {
	return Validate(c.apply(DefaultPolicy()))
}

// apply is p with the settings c gives.
func (c PolicyChange) apply(p queries.AlertPolicy) queries.AlertPolicy {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.DownAfter, c.DownAfter)
	set(&p.UpAfter, c.UpAfter)
	set(&p.StormShare, c.StormShare)
	set(&p.StormMin, c.StormMin)
	if c.ResendEvery != nil {
		p.ResendEvery = *c.ResendEvery
	}
	return p
}

// ReadPolicy reads the directory-wide policy.
func ReadPolicy(ctx context.Context, db queries.DBTX) (queries.AlertPolicy, error) {
	return queries.ReadAlertPolicy(ctx, db)
}

// SetPolicy applies a change and returns the policy before and after it; with dryRun nothing is
// written. Bad values are a *SettingError and change nothing.
func SetPolicy(ctx context.Context, db queries.DB, c PolicyChange, dryRun bool) (before, after queries.AlertPolicy, err error) {
	before, err = queries.ReadAlertPolicy(ctx, db)
	if err != nil {
		return before, after, err
	}
	after = c.apply(before)
	after.UpdatedBy = c.By
	if err := Validate(after); err != nil {
		return before, before, err
	}
	if dryRun {
		return before, after, nil
	}
	after, err = queries.SetAlertPolicy(ctx, db, after)
	return before, after, err
}
