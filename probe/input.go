package probe

import "github.com/probectl/probectl/internal/input"

// The inputs probe's errors name (see internal/input), as the commands' flags give them.
const (
	// InputUnsigned asks for a round whose runs are stored unsigned (Round.Signer nil).
	InputUnsigned input.Name = "unsigned"
	// InputSpoolDir is the spool directory (Round.SpoolDir).
	InputSpoolDir input.Name = "spool_dir"
)

// newKeyError is a *KeyError whose message names inputs (internal/input).
func newKeyError(format string, args ...any) *KeyError {
	t := input.Errorf(format, args...)
	return &KeyError{Msg: t.Error(), text: t}
}

// Unwrap is the message, whose inputs a command says as its flags (nil when none was kept).
func (e *KeyError) Unwrap() error {
	if e.text == nil {
		return nil
	}
	return e.text
}

// newSpoolError is a *SpoolError whose message names inputs (internal/input).
func newSpoolError(format string, args ...any) *SpoolError {
	t := input.Errorf(format, args...)
	return &SpoolError{Msg: t.Error(), text: t}
}

// Unwrap is the message, whose inputs a command says as its flags (nil when none was kept).
func (e *SpoolError) Unwrap() error {
	if e.text == nil {
		return nil
	}
	return e.text
}
