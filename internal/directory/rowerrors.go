package directory

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxRowErrors bounds the bad rows one import reports: enough to fix a file in one pass, few
// enough to read.
const MaxRowErrors = 100

// RowErrors are the bad rows of an import, in the order found (at most MaxRowErrors). Nothing of
// an import with a bad row is written.
type RowErrors struct {
	Rows []*LineError
	// Truncated: more rows were bad than MaxRowErrors, or a row so broken that reading stopped
	// there; the rest of the file was not checked.
	Truncated bool
}

func (e *RowErrors) Error() string {
	if len(e.Rows) == 1 && !e.Truncated {
		return e.Rows[0].Error()
	}
	msgs := make([]string, len(e.Rows))
	for i, r := range e.Rows {
		msgs[i] = r.Error()
	}
	return fmt.Sprintf("%d bad rows: %s", len(e.Rows), strings.Join(msgs, "; "))
}

// Unwrap gives each bad row, so errors.As finds the first *LineError.
func (e *RowErrors) Unwrap() []error {
	out := make([]error, len(e.Rows))
	for i, r := range e.Rows {
		out[i] = r
	}
	return out
}

// badRows collects the bad rows of one parse.
type badRows struct{ RowErrors }

// add records a bad row and says whether the parse must stop (the bound is reached).
func (b *badRows) add(line int, err error) (stop bool) {
	if len(b.Rows) == MaxRowErrors {
		b.Truncated = true
		return true
	}
	b.Rows = append(b.Rows, &LineError{Line: line, Err: err})
	return false
}

// fatal ends the parse on an error that leaves the rest of the file unreadable, reporting it after
// the bad rows found before it.
func (b *badRows) fatal(err error) error {
	if len(b.Rows) == 0 {
		return err
	}
	if le, ok := err.(*LineError); ok && len(b.Rows) < MaxRowErrors {
		b.Rows = append(b.Rows, le)
	}
	b.Truncated = true
	return &b.RowErrors
}

// err is the parse's verdict: nil when every row was good.
func (b *badRows) err() error {
	if len(b.Rows) == 0 {
		return nil
	}
	return &b.RowErrors
}

// sortRowErrors puts the bad rows in line order (duplicates are found after the rows they follow).
func sortRowErrors(rows []*LineError) {
	slices.SortStableFunc(rows, func(a, b *LineError) int { return a.Line - b.Line })
}

// MaxLineBytes bounds a line of an import, in every format (JSON lines read it with a buffer of
// that size): a CSV row of 50 MB was read, and quoted whole in its error.
const MaxLineBytes = 1 << 20

// checkLines refuses an import with bytes that are not UTF-8, and, for the formats read a line at
// a time (CSV, JSON lines: bounded), with a line over MaxLineBytes, each such line named (at most
// MaxRowErrors), before any row is judged: JSON decoding would replace bytes that are not UTF-8
// with U+FFFD (a URL stored that is not the file's), and the database refuses them in a text
// column (a raw error after the parse). A JSON document (an array, a registry page) may be one
// long line: only the import's size bounds it. The bytes are not quoted.
func checkLines(data []byte, bounded bool) error {
	if !bounded && utf8.Valid(data) {
		return nil
	}
	var bad badRows
	for n, rest := 1, data; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i]
		}
		rest = rest[len(line):]
		if len(rest) > 0 {
			rest = rest[1:]
		}
		var why error
		switch {
		case bounded && len(bytes.TrimSuffix(line, []byte("\r"))) > MaxLineBytes: // a CRLF ends a line too
			why = fmt.Errorf("%d bytes, longer than the %d-byte (1 MiB) line limit", len(line), MaxLineBytes)
		case !utf8.Valid(line):
			why = fmt.Errorf("not valid UTF-8 text (character %d)", utf8.RuneCount(line[:firstInvalid(line)])+1)
		default:
			continue
		}
		if bad.add(n, why) {
			break
		}
	}
	return bad.err()
}

// firstInvalid is the offset of line's first byte that does not start a valid UTF-8 sequence.
func firstInvalid(line []byte) int {
	for off := 0; off < len(line); {
		r, size := utf8.DecodeRune(line[off:])
		if r == utf8.RuneError && size == 1 {
			return off
		}
		off += size
	}
	return len(line)
}
