package probe

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// Finish modes.
const (
	// FinishTx advances, stores the run and closes the job in one transaction.
	FinishTx = "tx"
	// FinishAdvanceFirst makes two writes in the safe order, for databases without probe_finish.
	FinishAdvanceFirst = "advance-first"
)

// Triggers of a round.
const (
	TriggerCron   = "cron"
	TriggerManual = "manual"
)

// Settings are everything that decides how a round runs. They are recorded on the round's row;
// a release supplies defaults and flags override them.
type Settings struct {
	// Fanout is the number of fan-out invocations besides the cron one.
	Fanout int
	// ClaimLimit is the most servers one invocation claims over its life.
	ClaimLimit int
	// Concurrency is the most checks one invocation runs at once.
	Concurrency int
	// MinSpacing is the spacing guard: no server is claimed within it of its last job (0 = off).
	MinSpacing time.Duration
	// MaxDuration is the round's time budget: no claim starts after it.
	MaxDuration time.Duration
	// RequestTimeout bounds each request of a check.
	RequestTimeout time.Duration
	// MaxBodyBytes caps each response body a check reads.
	MaxBodyBytes int64
	// Finish is FinishTx or FinishAdvanceFirst.
	Finish string
	// AllowPrivateTargets lets checks reach loopback, private and link-local addresses.
	AllowPrivateTargets bool
	// Trigger is TriggerCron or TriggerManual.
	Trigger string
	// Version is the probectl version that runs the round.
	Version string
	// Contact is the URL every request's User-Agent names, so that an operator can find out who
	// probes them (check.DefaultContact by default).
	Contact string
	// ReleaseID is the release the settings came from, if any.
	ReleaseID *int64
}

// DefaultSettings are the settings of the parallel version of the incident, with its fix.
func DefaultSettings() Settings {
	return Settings{
		Fanout:         19,
		ClaimLimit:     5,
		Concurrency:    3,
		MinSpacing:     10 * time.Minute,
		MaxDuration:    4 * time.Minute,
		RequestTimeout: 10 * time.Second,
		MaxBodyBytes:   1 << 20,
		Finish:         FinishTx,
		Trigger:        TriggerManual,
		Version:        "dev",
		Contact:        check.DefaultContact,
	}
}

// Invocations is the number of invocations of a round: the cron one plus the fan-out.
func (s Settings) Invocations() int { return s.Fanout + 1 }

// Capacity is the most jobs a round with these settings can claim.
func (s Settings) Capacity() int { return s.Invocations() * s.ClaimLimit }

// CheckBudget bounds one check: every request it may make at the per-request timeout.
func (s Settings) CheckBudget() time.Duration {
	return mulSat(check.MaxRequests, s.RequestTimeout)
}

// mulSat is n × d, or the longest duration when that overflows (n >= 0, d >= 0).
func mulSat(n int, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// addSat is a + b, or the longest duration when that overflows (a, b >= 0).
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// CheckConfig is the checker's configuration these settings ask for, so that every caller that
// runs a round checks with the same timeout, body cap and address policy that the round records.
func (s Settings) CheckConfig() check.Config {
	return check.Config{RequestTimeout: s.RequestTimeout, MaxBodyBytes: s.MaxBodyBytes,
		AllowPrivate: s.AllowPrivateTargets, UserAgent: check.UserAgent(s.Version, s.Contact)}
}

// JobWorstCase is how long a job may stay open in the worst case: a full check, the round's
// budget and the finish's. It must fit the in-flight window, or another round could take a live
// job for abandoned and claim its server again.
func (s Settings) JobWorstCase() time.Duration {
	// Saturated, never wrapped: a timeout large enough to wrap 8 × timeout must fail the check.
	return addSat(addSat(s.CheckBudget(), s.MaxDuration), finishTimeout)
}

// Setting names one of the settings where an error or an override speaks of it, so that each
// caller says it in its own words: `run round` and `deploy record` as their flag (--claim-limit),
// a stored release's check or a log as the name itself. The names are those of the round's
// recorded settings (claim_limit, min_spacing, ...).
type Setting string

// The settings a person sets.
const (
	SettingFanout         Setting = "fanout"
	SettingClaimLimit     Setting = "claim_limit"
	SettingConcurrency    Setting = "concurrency"
	SettingMinSpacing     Setting = "min_spacing"
	SettingMaxDuration    Setting = "max_duration"
	SettingRequestTimeout Setting = "request_timeout"
	SettingMaxBody        Setting = "max_body_bytes"
	SettingFinish         Setting = "finish"
	SettingTrigger        Setting = "trigger"
	SettingContact        Setting = "contact"
)

// SettingsError is a setting that cannot be used; nothing was claimed. Its text names settings as
// Setting values; Say names them the caller's way.
type SettingsError struct {
	// Setting is the setting at fault; "" when Subject says what is (the lease, a release).
	Setting Setting
	// Subject heads the message in place of the setting: "lease", "release #3".
	Subject string
	format  string
	args    []any // a Setting among them is said the caller's way
}

// NewSettingsError says that setting is wrong: format and args say how, and any Setting among args
// is said the caller's way too.
func NewSettingsError(setting Setting, format string, args ...any) *SettingsError {
	return &SettingsError{Setting: setting, format: format, args: args}
}

func (e *SettingsError) Error() string { return e.Say(nil) }

// Say is the error with every setting named by name (nil: by its Setting value), as a command
// that names its flags shows it.
func (e *SettingsError) Say(name func(Setting) string) string {
	if name == nil {
		name = func(s Setting) string { return string(s) }
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if s, ok := a.(Setting); ok {
			a = name(s)
		}
		args[i] = a
	}
	subject := e.Subject
	if subject == "" {
		subject = name(e.Setting)
	}
	return subject + ": " + fmt.Sprintf(e.format, args...)
}

// ExitCode: a bad setting is bad input.
func (e *SettingsError) ExitCode() int { return exit.Usage }

// Validate checks every setting and the lease: a job's worst case must fit the in-flight window.
func (s Settings) Validate() error {
	var errs []error
	bad := func(setting Setting, format string, args ...any) {
		errs = append(errs, NewSettingsError(setting, format, args...))
	}
	if s.Fanout < 0 {
		bad(SettingFanout, "must be 0 or more, got %d", s.Fanout)
	}
	if s.ClaimLimit < 1 {
		bad(SettingClaimLimit, "must be at least 1, got %d", s.ClaimLimit)
	}
	if s.Concurrency < 1 {
		bad(SettingConcurrency, "must be at least 1, got %d", s.Concurrency)
	}
	if s.MinSpacing < 0 {
		bad(SettingMinSpacing, "must not be negative, got %s", s.MinSpacing)
	}
	if s.MaxDuration <= 0 {
		bad(SettingMaxDuration, "must be positive, got %s", s.MaxDuration)
	}
	if s.RequestTimeout <= 0 {
		bad(SettingRequestTimeout, "must be positive, got %s", s.RequestTimeout)
	}
	if s.MaxBodyBytes <= 0 {
		bad(SettingMaxBody, "must be positive, got %d", s.MaxBodyBytes)
	}
	if s.Finish != FinishTx && s.Finish != FinishAdvanceFirst {
		bad(SettingFinish, "must be %s or %s, got %q", FinishTx, FinishAdvanceFirst, s.Finish)
	}
	if s.Trigger != TriggerCron && s.Trigger != TriggerManual {
		bad(SettingTrigger, "must be %s or %s, got %q", TriggerCron, TriggerManual, s.Trigger)
	}
	if s.Contact != "" {
		if err := check.ValidContact(s.Contact); err != nil {
			bad(SettingContact, "%s", err)
		}
	}
	if s.RequestTimeout > 0 && s.MaxDuration > 0 && s.JobWorstCase() > queries.InFlightWindow {
		lease := NewSettingsError("", "%d requests × %s %s + %s %s + finish %s = %s does not fit the %s "+
			"in-flight window; lower %s or %s", check.MaxRequests, SettingRequestTimeout, s.RequestTimeout,
			SettingMaxDuration, s.MaxDuration, finishTimeout, s.JobWorstCase(), queries.InFlightWindow,
			SettingRequestTimeout, SettingMaxDuration)
		lease.Subject = "lease"
		errs = append(errs, lease)
	}
	return errors.Join(errs...)
}

// record is the JSON stored on the round's row: every setting, durations in seconds.
func (s Settings) record(keyID string) map[string]any {
	return map[string]any{
		"fanout":                  s.Fanout,
		"claim_limit":             s.ClaimLimit,
		"concurrency":             s.Concurrency,
		"min_spacing_seconds":     s.MinSpacing.Seconds(),
		"max_duration_seconds":    s.MaxDuration.Seconds(),
		"request_timeout_seconds": s.RequestTimeout.Seconds(),
		"max_body_bytes":          s.MaxBodyBytes,
		"finish":                  s.Finish,
		"allow_private_targets":   s.AllowPrivateTargets,
		"in_flight_seconds":       queries.InFlightWindow.Seconds(),
		"signed":                  keyID != "",
		"key_id":                  keyID,
		"contact":                 s.Contact,
	}
}
