package render

import (
	"fmt"
	"io"
)

// The formats -o names. A command lists those it offers (factory.OutputFormat) before it connects,
// and writes its result through Output, the one path from a value to stdout.
const (
	FormatTable = "table" // for a person: a table, titled sections or sentences (View.Text)
	FormatJSON  = "json"  // the value itself (View.JSON), encoded by JSON
	FormatCSV   = "csv"   // records for a spreadsheet (View.CSV), where a command offers it
)

// View is one command's result in each format it offers. JSON is the value encoding/json writes:
// a struct with snake_case json tags (or a domain type that has them), RFC 3339 times, seconds as
// numbers, empty lists as [] (the shape is the contract, tested). Text writes what a person reads,
// to the command's stdout; a warning beside it goes to stderr from there too. CSV, set only by a
// command that offers -o csv, writes records through NewCSV. A view without JSON is for a person
// only (a plan shown before a question, whose JSON comes with the answer): -o json writes nothing
// of it; one without Text has written its text along the way.
type View struct {
	JSON any
	Text func() error
	CSV  func() error
}

// Output writes v in format, one the command offered: "json" encodes v.JSON (JSON: two spaces of
// indentation and one trailing newline, the same for every command), "csv" calls v.CSV, anything
// else ("table") calls v.Text.
func Output(w io.Writer, format string, v View) error {
	switch {
	case format == FormatJSON && v.JSON == nil:
		return nil
	case format == FormatJSON:
		return JSON(w, v.JSON)
	case format == FormatCSV && v.CSV != nil:
		return v.CSV()
	case format == FormatCSV:
		return fmt.Errorf("render: -o csv asked of a view without CSV")
	case v.Text == nil:
		return nil
	}
	return v.Text()
}
