// Package render is the one place that decides how probectl looks on a terminal: the streams and
// whether they are terminals, the table printer, the lipgloss styles, durations and times, and the
// one path from a command's result to stdout (Output, which writes a View as JSON, text or CSV).
// Commands hand it data; it never decides anything about that data.
package render
