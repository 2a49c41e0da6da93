package settings

import (
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
)

// Setting names one of the settings where an error or an override speaks of it, so that each
// caller says it in its own words: `run round` and `deploy record` as their flag (--claim-limit,
// Field.Flag), a stored release's check or a log as the name itself. The names are the field
// table's (claim_limit, min_spacing, ...).
type Setting string

// The settings a person sets, as the field table names them.
const (
	Fanout              Setting = "fanout"
	ClaimLimit          Setting = "claim_limit"
	Concurrency         Setting = "concurrency"
	MinSpacing          Setting = "min_spacing"
	MaxDuration         Setting = "max_duration"
	RequestTimeout      Setting = "request_timeout"
	MaxBody             Setting = "max_body_bytes"
	Finish              Setting = "finish"
	Trigger             Setting = "trigger"
	Contact             Setting = "contact"
	AllowPrivateTargets Setting = "allow_private_targets"
)

// Error is a setting that cannot be used; nothing was claimed. Its text names settings as
// Setting values, kept apart as input.Names in the input.Text it unwraps to: a command says them
// as its flags the way it says every domain input (input.Say), a stored release's check or a log
// as the names themselves.
type Error struct {
	// Setting is the setting at fault; "" when Subject says what is (the lease, a release).
	Setting Setting
	// Subject heads the message in place of the setting: "lease", "release #3".
	Subject string
	format  string
	args    []any // a Setting among them is said the caller's way
}

// NewError says that setting is wrong: format and args say how, and any Setting among args is
// said the caller's way too.
func NewError(setting Setting, format string, args ...any) *Error {
	return &Error{Setting: setting, format: format, args: args}
}

func (e *Error) Error() string { return e.Unwrap().Error() }

// Unwrap is the error's text with every setting (the one at fault and any among its arguments) an
// input.Name, named as the setting is ("claim_limit"), for the caller to say its own way.
func (e *Error) Unwrap() error {
	args := make([]any, 0, len(e.args)+1)
	if e.Subject != "" {
		args = append(args, e.Subject)
	} else {
		args = append(args, input.Name(e.Setting))
	}
	for _, a := range e.args {
		if s, ok := a.(Setting); ok {
			a = input.Name(s)
		}
		args = append(args, a)
	}
	return input.Errorf("%s: "+e.format, args...)
}

// ExitCode: a bad setting is bad input.
func (e *Error) ExitCode() int { return exit.Usage }
