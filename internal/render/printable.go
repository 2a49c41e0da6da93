package render

import (
	"strings"
	"unicode"
)

// Printable returns s with every rune a terminal would not print as text (escape sequences,
// carriage returns, other control and format characters) replaced by U+FFFD. Text that a probed
// server chose (a tool's name or description) goes through it before it reaches a terminal, so a
// hostile server cannot move the cursor, clear the screen or hide a line of the report.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return unicode.ReplacementChar
	}, s)
}
