package settings

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/probectl/probectl/internal/render"
)

// The bounds of every setting a person can ask for, at `run round` and `deploy record` alike, and
// of a release a round takes its settings from. They are the commands' rules, not Validate's: the
// incident replay runs the old settings (a spacing of 0) on its own throwaway database.
const (
	// MinRequestTimeout and MinMaxDuration keep a duration a release can store: PostgreSQL's
	// intervals count microseconds, so 1ns would be stored as 0 and refused by the database (exit
	// 3), or run as a timeout no request can meet (every check an error, blamed on the servers).
	// Flags and new releases meet them; a release recorded below them before they came still
	// runs (Field.floor).
	MinRequestTimeout = time.Second
	MaxRequestTimeout = time.Minute
	MinMaxDuration    = time.Second
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
)

// Carried are the settings a release carries, one field per carried row of Fields below: `deploy record` stores them on the release's row
// (the db tags are its columns), a round takes them from the active release unless a flag
// overrides one, and every JSON shape that shows a release or a round shows them with these keys.
type Carried struct {
	// Fanout is the number of fan-out invocations besides the cron one.
	Fanout int `json:"fanout" db:"fanout"`
	// ClaimLimit is the most servers one invocation claims over its life.
	ClaimLimit int `json:"claim_limit" db:"claim_limit"`
	// Concurrency is the most checks one invocation runs at once.
	Concurrency int `json:"concurrency" db:"concurrency"`
	// MinSpacing is the spacing guard: no server is claimed within it of its last job (0 = off).
	MinSpacing Duration `json:"min_spacing_seconds" db:"min_spacing"`
	// RequestTimeout bounds each request of a check.
	RequestTimeout Duration `json:"request_timeout_seconds" db:"request_timeout"`
	// MaxDuration is the round's time budget: no claim starts after it.
	MaxDuration Duration `json:"max_duration_seconds" db:"max_duration"`
	// Finish is FinishTx or FinishAdvanceFirst.
	Finish string `json:"finish" db:"finish_mode"`
	// Contact is the URL every request's User-Agent names, so that an operator can find out who
	// probes them. A release recorded before releases had it stores NULL, read as "": the default.
	Contact string `json:"contact" db:"contact"`
}

// Default are the settings of the parallel version of the incident, with its fix: the binary's
// own, for every flag left unset and every round without a release.
func Default() Settings {
	return Settings{
		Carried: Carried{
			Fanout:         19,
			ClaimLimit:     5,
			Concurrency:    3,
			MinSpacing:     Duration(10 * minute),
			MaxDuration:    Duration(4 * minute),
			RequestTimeout: Duration(10 * second),
			Finish:         FinishTx,
			Contact:        DefaultContact,
		},
		MaxBodyBytes: 1 << 20,
		Trigger:      TriggerManual,
		Version:      "dev",
	}
}

// Field is one row of the field table: a setting, how a person sets it, whether a release carries
// it, its bound, and how it is shown. The commands derive their flags from it, Resolve its
// override rule and bounds, Validate its checks, and the tables their values.
type Field struct {
	Name Setting
	// Flag is the flag of `run round` (and `deploy record` when Carried) that sets it; Usage is
	// its help line.
	Flag, Usage string
	// Label is how a table row names it ("claim limit").
	Label string
	// Carried: a release stores it (a column of releases, a field of Carried) and a round takes
	// it from the active release unless its flag is given.
	Carried bool
	// Bound is the bound said in an error ("at most 1m"); "" when there is none.
	Bound string
	// Values are the only values it takes, when they are a list (shells complete them).
	Values []string
	in     func(Settings) bool // inside Bound
	// floor is a lower bound only a new value must meet (a flag, a release being recorded): a
	// release an earlier version recorded below it still runs (nil: none).
	floor func(Settings) bool
	// valid says why a value cannot be used at all ("" when it can), bounds apart.
	valid func(Settings) string
	// Ptr points at the field's value in s: *int, *int64, *Duration, *string or *bool.
	Ptr func(s *Settings) any
}

// Fields is the field table, in the order flags, errors and tables list settings.
var Fields = []Field{
	{Name: Fanout, Flag: "fanout", Label: "fanout", Carried: true,
		Usage: "fan-out invocations besides the cron one",
		Bound: "at most 1000", in: func(s Settings) bool { return s.Fanout <= MaxFanout },
		valid: func(s Settings) string { return atLeast(s.Fanout, 0, "must be 0 or more, got %d") },
		Ptr:   func(s *Settings) any { return &s.Fanout }},
	{Name: ClaimLimit, Flag: "claim-limit", Label: "claim limit", Carried: true,
		Usage: "most servers one invocation claims over its life",
		Bound: "at most 10000", in: func(s Settings) bool { return s.ClaimLimit <= MaxClaimLimit },
		valid: func(s Settings) string { return atLeast(s.ClaimLimit, 1, "must be at least 1, got %d") },
		Ptr:   func(s *Settings) any { return &s.ClaimLimit }},
	{Name: Concurrency, Flag: "concurrency", Label: "concurrency", Carried: true,
		Usage: "most checks one invocation runs at once",
		Bound: "at most 10000", in: func(s Settings) bool { return s.Concurrency <= MaxConcurrency },
		valid: func(s Settings) string { return atLeast(s.Concurrency, 1, "must be at least 1, got %d") },
		Ptr:   func(s *Settings) any { return &s.Concurrency }},
	{Name: MinSpacing, Flag: "min-spacing", Label: "min spacing", Carried: true,
		Usage: "skip servers with a job within this (maintainer claims excepted)",
		Bound: "between 10m (no server is checked twice within 10 minutes) and 7d",
		in: func(s Settings) bool {
			return s.MinSpacing.D() >= MinMinSpacing && s.MinSpacing.D() <= MaxMinSpacing
		},
		valid: func(s Settings) string {
			return sayIf(s.MinSpacing < 0, "must not be negative, got %s", s.MinSpacing)
		},
		Ptr: func(s *Settings) any { return &s.MinSpacing }},
	{Name: RequestTimeout, Flag: "request-timeout", Label: "request timeout", Carried: true,
		Usage: "timeout of each request of a check",
		Bound: "between 1s and 1m",
		in:    func(s Settings) bool { return s.RequestTimeout.D() <= MaxRequestTimeout },
		floor: func(s Settings) bool { return s.RequestTimeout.D() >= MinRequestTimeout },
		valid: func(s Settings) string {
			return sayIf(s.RequestTimeout <= 0, "must be positive, got %s", s.RequestTimeout)
		},
		Ptr: func(s *Settings) any { return &s.RequestTimeout }},
	{Name: MaxDuration, Flag: "max-duration", Label: "max duration", Carried: true,
		Usage: "the round's time budget: no claim after it",
		Bound: "between 1s and 14m",
		in:    func(s Settings) bool { return s.MaxDuration.D() <= MaxMaxDuration },
		floor: func(s Settings) bool { return s.MaxDuration.D() >= MinMaxDuration },
		valid: func(s Settings) string {
			return sayIf(s.MaxDuration <= 0, "must be positive, got %s", s.MaxDuration)
		},
		Ptr: func(s *Settings) any { return &s.MaxDuration }},
	{Name: Finish, Flag: "finish", Label: "finish", Carried: true,
		Usage:  "finish mode: tx or advance-first",
		Values: finishModes,
		valid:  func(s Settings) string { return oneOf(s.Finish, finishModes) },
		Ptr:    func(s *Settings) any { return &s.Finish }},
	{Name: Contact, Flag: "contact", Label: "contact", Carried: true,
		Usage: "URL (or mailto:) the User-Agent names, so operators can reach you",
		valid: func(s Settings) string {
			if s.Contact == "" {
				return ""
			}
			if err := ValidContact(s.Contact); err != nil {
				return err.Error()
			}
			return ""
		},
		Ptr: func(s *Settings) any { return &s.Contact }},
	{Name: MaxBody, Flag: "max-body", Label: "max body",
		Usage: "most bytes read of each response body (at most 8 MiB)",
		Bound: "at most 8388608 (8 MiB)", in: func(s Settings) bool { return s.MaxBodyBytes <= MaxMaxBody },
		valid: func(s Settings) string {
			return sayIf(s.MaxBodyBytes <= 0, "must be positive, got %d", s.MaxBodyBytes)
		},
		Ptr: func(s *Settings) any { return &s.MaxBodyBytes }},
	{Name: Trigger, Flag: "trigger", Label: "trigger",
		Usage:  "what started the round: manual or cron",
		Values: triggers,
		valid:  func(s Settings) string { return oneOf(s.Trigger, triggers) },
		Ptr:    func(s *Settings) any { return &s.Trigger }},
	{Name: AllowPrivateTargets, Flag: "allow-private-targets", Label: "allow private targets",
		Usage: "let checks reach loopback and private addresses (never cloud metadata or link-local)",
		Ptr:   func(s *Settings) any { return &s.AllowPrivateTargets }},
}

// Columns are the carried settings by column of releases (their db tags), as queries inserts them.
func (c Carried) Columns() map[string]any {
	v := reflect.ValueOf(c)
	out := make(map[string]any, v.NumField())
	for i := range v.NumField() {
		out[v.Type().Field(i).Tag.Get("db")] = v.Field(i).Interface()
	}
	return out
}

// CarriedFields are the rows of the field table a release carries.
func CarriedFields() []Field {
	var out []Field
	for _, f := range Fields {
		if f.Carried {
			out = append(out, f)
		}
	}
	return out
}

// Lookup is the field table's row of a setting.
func Lookup(name Setting) (Field, bool) {
	for _, f := range Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Value is the field's value in s as errors and overrides say it ("10m0s", "5").
func (f Field) Value(s Settings) string {
	return fmt.Sprint(deref(f.Ptr(&s)))
}

// Show is the field's value in s as tables show it ("10m", "5").
func (f Field) Show(s Settings) string {
	if d, ok := f.Ptr(&s).(*Duration); ok {
		return render.Duration(d.D())
	}
	return f.Value(s)
}

// copyTo sets the field of dst to its value in src.
func (f Field) copyTo(dst *Settings, src Settings) {
	switch p := f.Ptr(dst).(type) {
	case *int:
		*p = src.field(f).(int)
	case *int64:
		*p = src.field(f).(int64)
	case *Duration:
		*p = src.field(f).(Duration)
	case *string:
		*p = src.field(f).(string)
	case *bool:
		*p = src.field(f).(bool)
	default:
		panic(fmt.Sprintf("settings: field %s has a value of type %T", f.Name, p))
	}
}

func (s Settings) field(f Field) any { return deref(f.Ptr(&s)) }

func deref(p any) any {
	switch p := p.(type) {
	case *int:
		return *p
	case *int64:
		return *p
	case *Duration:
		return *p
	case *string:
		return *p
	case *bool:
		return *p
	}
	panic(fmt.Sprintf("settings: a field of type %T", p))
}

// Validate checks every setting and the lease: a job's worst case must fit the in-flight window.
// Each error is an *Error naming its setting.
func (s Settings) Validate() error {
	var errs []error
	for _, f := range Fields {
		if err := f.invalid(s); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.leaseError(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckBounds refuses settings outside the field table's bounds, each error naming its setting
// and its bound (an *Error: exit 2).
func (s Settings) CheckBounds() error {
	var errs []error
	for _, f := range Fields {
		if err := f.outOfBounds(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Check judges the settings names only, by their rows' checks and bounds (an *Error each, exit
// 2), as Validate and CheckBounds judge them all: for a command that sets only some of them
// (check's --request-timeout and --max-body).
func (s Settings) Check(names ...Setting) error {
	var errs []error
	for _, f := range Fields {
		if !slices.Contains(names, f.Name) {
			continue
		}
		if err := f.invalid(s); err != nil {
			errs = append(errs, err)
		} else if err := f.outOfBounds(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// invalid is the field's own check of s (an *Error naming it), or nil.
func (f Field) invalid(s Settings) error {
	if f.valid == nil {
		return nil
	}
	if why := f.valid(s); why != "" {
		return NewError(f.Name, "%s", why)
	}
	return nil
}

// outOfBounds refuses s's value of the field outside its bound (an *Error naming it), or nil.
func (f Field) outOfBounds(s Settings) error {
	if (f.in != nil && !f.in(s)) || (f.floor != nil && !f.floor(s)) {
		return NewError(f.Name, "%s is out of bounds: must be %s", f.Value(s), f.Bound)
	}
	return nil
}

func atLeast(n, low int, format string) string { return sayIf(n < low, format, n) }

// The values of the settings that take one of a list, as their errors say them.
var (
	finishModes = []string{FinishTx, FinishAdvanceFirst}
	triggers    = []string{TriggerCron, TriggerManual}
)

// oneOf says why v is none of values ("" when it is one of them): "must be a, b or c".
func oneOf(v string, values []string) string {
	if slices.Contains(values, v) {
		return ""
	}
	last := len(values) - 1
	if last < 1 {
		return fmt.Sprintf("must be %s, got %q", strings.Join(values, ""), v)
	}
	return fmt.Sprintf("must be %s or %s, got %q", strings.Join(values[:last], ", "), values[last], v)
}

func sayIf(bad bool, format string, args ...any) string {
	if !bad {
		return ""
	}
	return fmt.Sprintf(format, args...)
}
