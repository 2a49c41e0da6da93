// Package exit gives errors the exit code the command contract promises: 1 a check or audit found
// a problem, 2 bad usage or bad input, 3 the work could not be done. Domain packages wrap their
// errors with these (or implement ExitCode themselves); only main turns them into a process exit.
package exit

import (
	"errors"
)

// The exit codes of the command contract.
const (
	OK          = 0
	Found       = 1
	Usage       = 2
	Unavailable = 3
)

// Error is an error with an exit code.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// ExitCode implements Coder.
func (e *Error) ExitCode() int { return e.Code }

// Coder is implemented by errors that know their exit code.
type Coder interface{ ExitCode() int }

// UsageError marks bad usage or bad input (exit 2): the user can fix it and nothing was changed.
func UsageError(err error) error { return wrap(Usage, err) }

// FoundError marks a check or audit that found a problem (exit 1).
func FoundError(err error) error { return wrap(Found, err) }

// UnavailableError marks work that could not be done (exit 3): database, network, migrations.
func UnavailableError(err error) error { return wrap(Unavailable, err) }

func wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Code returns the exit code for err: 0 for nil, the code of the outermost Coder in its chain,
// and 3 for anything unclassified (an error nobody expected means the work was not done).
func Code(err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Unavailable
}
