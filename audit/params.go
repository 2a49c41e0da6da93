package audit

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/queries"
)

// ParamError is bad input to an audit: the caller can fix it, and nothing was read. Param names
// the parameter ("since", "until", "window", "split-at"); the message names it, and any other
// parameter, as an input.Name, which a command says as its flag ("--since: ...").
type ParamError struct {
	Param string
	Msg   string
	text  *input.Text // "param: msg" with the parameters kept apart
}

// The parameters ParamError names (see internal/input).
const (
	InputSince    input.Name = "since"
	InputUntil    input.Name = "until"
	InputWindow   input.Name = "window"
	InputSplitAt  input.Name = "split-at"
	InputInFlight input.Name = "in-flight"
)

// paramError says that param is wrong: format and args say how; any input.Name among args is
// said the caller's way.
func paramError(param input.Name, format string, args ...any) *ParamError {
	return &ParamError{Param: string(param), Msg: input.Errorf(format, args...).Error(),
		text: input.Errorf("%s: "+format, append([]any{param}, args...)...)}
}

func (e *ParamError) Error() string {
	if e.text == nil {
		return e.Param + ": " + e.Msg
	}
	return e.text.Error()
}

// Unwrap is the message, whose parameters a command says as its flags.
func (e *ParamError) Unwrap() error {
	if e.text == nil {
		return nil
	}
	return e.text
}

// ExitCode: bad input exits 2.
func (e *ParamError) ExitCode() int { return exit.Usage }

// resolve fills the defaults (Until from the database clock, Window) and checks the range.
func (p DuplicatesParams) resolve(ctx context.Context, tx pgx.Tx) (DuplicatesParams, error) {
	if p.Since.IsZero() {
		return p, paramError(InputSince, "is required")
	}
	switch {
	case p.Window < 0:
		return p, paramError(InputWindow, "must be positive, got %s", p.Window)
	case p.Window == 0:
		p.Window = DefaultWindow
	}
	until, err := resolveUntil(ctx, tx, p.Until)
	if err != nil {
		return p, err
	}
	p.Until = until
	p.Since = p.Since.UTC()
	split, err := checkRange(p.Since, p.Until, p.SplitAt)
	if err != nil {
		return p, err
	}
	p.SplitAt = split
	return p, nil
}

func resolveUntil(ctx context.Context, tx pgx.Tx, until time.Time) (time.Time, error) {
	if !until.IsZero() {
		return until.UTC(), nil
	}
	return queries.AuditNow(ctx, tx)
}

// checkRange checks since < until and returns the split times sorted, without repeats, each
// strictly inside (since, until).
func checkRange(since, until time.Time, splitAt []time.Time) ([]time.Time, error) {
	if !since.Before(until) {
		return nil, paramError(InputSince, "%s is not before %s %s",
			since.Format(time.RFC3339Nano), InputUntil, until.Format(time.RFC3339Nano))
	}
	split := make([]time.Time, 0, len(splitAt))
	for _, t := range splitAt {
		t = t.UTC()
		if !t.After(since) || !t.Before(until) {
			return nil, paramError(InputSplitAt, "%s is not strictly between %s %s and %s %s",
				t.Format(time.RFC3339Nano), InputSince, since.Format(time.RFC3339Nano), InputUntil, until.Format(time.RFC3339Nano))
		}
		split = append(split, t)
	}
	slices.SortFunc(split, time.Time.Compare)
	return slices.CompactFunc(split, time.Time.Equal), nil
}

// enterWindow starts an audit over [since, until) in tx (see enter): since is required, a zero
// until is the database's now(), and since must be before until. It returns both in UTC.
func enterWindow(ctx context.Context, tx pgx.Tx, since, until time.Time) (time.Time, time.Time, error) {
	if err := enter(ctx, tx); err != nil {
		return since, until, err
	}
	if since.IsZero() {
		return since, until, paramError(InputSince, "is required")
	}
	until, err := resolveUntil(ctx, tx, until)
	if err != nil {
		return since, until, err
	}
	since = since.UTC()
	if _, err := checkRange(since, until, nil); err != nil {
		return since, until, err
	}
	return since, until, nil
}

// readOnly runs one audit in its own READ ONLY, REPEATABLE READ transaction.
func readOnly[T any](ctx context.Context, db queries.DB, audit func(pgx.Tx) (T, error)) (T, error) {
	var r T
	err := inReadOnlyTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		r, err = audit(tx)
		return err
	})
	return r, err
}
