package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// CSV writes comma-separated records, each field through Printable (a field is one line of text:
// a server's newline, escape sequence or bidi override is written as its visible escape, as in a
// table) and with spreadsheet formulas defused: a field that starts with =, +, -, @, a tab or a
// carriage return and is not a plain number gets a leading apostrophe (the OWASP rule for CSV
// injection), since an audit's CSV is made to be opened in a spreadsheet, and a tool's name or a
// server's version there is a probed server's choice. Numbers, negative ones included, stay
// numbers.
type CSV struct{ w *csv.Writer }

// NewCSV starts a CSV on w.
func NewCSV(w io.Writer) *CSV { return &CSV{w: csv.NewWriter(w)} }

// Write writes one record; an error is kept for Flush.
func (c *CSV) Write(fields ...string) {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = csvField(f)
	}
	_ = c.w.Write(out)
}

// Flush writes what is buffered and returns the first error of any write.
func (c *CSV) Flush() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func csvField(f string) string {
	if f == "" {
		return f
	}
	switch f[0] {
	case '=', '+', '-', '@', '\t', '\r':
		if _, err := strconv.ParseFloat(f, 64); err != nil {
			f = "'" + f
		}
	}
	return Printable(f)
}
