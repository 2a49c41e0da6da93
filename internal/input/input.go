// Package input lets a domain package refuse bad input in its own words and a command say it in
// the words of its command line. Domain packages (probe, release, audit, …) never name flags: they
// name what they were given (Name "rounds", "spool_dir"), and cmd/probectl says each Name as the
// flag that sets it ("--rounds", "--spool-dir"), keeping the rest of the text, the error's type
// and its exit code.
package input

import (
	"fmt"
	"strings"
)

// Name is an input as a domain package names it: snake_case, as its field or setting is called.
type Name string

// Text is a message with the inputs it names kept apart, so that a caller can say them its own
// way (Say). It is an error, so that a domain error can wrap it; it carries no exit code of its
// own: the error that holds it (or exit.UsageError) says how bad it is.
type Text struct {
	format string
	args   []any // a Name among them is said the caller's way
}

// Errorf is fmt.Errorf's message (%w wraps as it does there) with any Name among args said the
// caller's way.
func Errorf(format string, args ...any) *Text { return &Text{format: format, args: args} }

// Error says every Name as it is ("rounds 0: must be at least 1").
func (t *Text) Error() string { return t.Say(nil) }

// Say is the message with every Name said by name (nil: as it is), as a command shows it.
func (t *Text) Say(name func(Name) string) string {
	if name == nil {
		return fmt.Errorf(t.format, t.args...).Error()
	}
	args := make([]any, len(t.args))
	for i, a := range t.args {
		if n, ok := a.(Name); ok {
			a = name(n)
		}
		args[i] = a
	}
	return fmt.Errorf(t.format, args...).Error()
}

// Unwrap is what the message wraps with %w, as fmt.Errorf would: errors.Is and errors.As see
// through a Text.
func (t *Text) Unwrap() []error {
	switch u := fmt.Errorf(t.format, t.args...).(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	}
	return nil
}

// Say is err's whole text with the inputs of every Text in its chain said by name, and whether
// there was any: the context err was wrapped in stays as it is.
func Say(err error, name func(Name) string) (string, bool) {
	texts := textsIn(err, nil)
	if len(texts) == 0 {
		return "", false
	}
	msg := err.Error()
	for _, t := range texts {
		msg = strings.Replace(msg, t.Error(), t.Say(name), 1)
	}
	return msg, true
}

// textsIn collects the *Text in err's chain, outermost first.
func textsIn(err error, out []*Text) []*Text {
	switch e := err.(type) {
	case nil:
		return out
	case *Text:
		return append(out, e)
	case interface{ Unwrap() []error }:
		for _, one := range e.Unwrap() {
			out = textsIn(one, out)
		}
	case interface{ Unwrap() error }:
		out = textsIn(e.Unwrap(), out)
	}
	return out
}
