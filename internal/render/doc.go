// Package render is the one place that decides how probectl looks on a terminal: the streams and
// whether they are terminals, the table printer, the lipgloss styles and JSON output. Commands
// hand it data; it never decides anything about that data.
package render
