package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Table prints rows under a header, aligned in columns without borders, the way `gh` and
// `kubectl` print lists: easy to read on a terminal and easy to grep in a pipe.
type Table struct {
	w      io.Writer
	header []string
	rows   [][]string
}

// NewTable starts a table with the given column names.
func NewTable(w io.Writer, header ...string) *Table {
	return &Table{w: w, header: header}
}

// Row adds one row; values are formatted with %v and pass Printable (a server's name or error
// cannot add a line, move the cursor, reorder the row or colour it: a colour it sends is shown as
// escapes). A Cell is probectl's own colour: its text passes Printable first, then takes its
// style.
func (t *Table) Row(values ...any) {
	row := make([]string, len(values))
	for i, v := range values {
		if c, ok := v.(Cell); ok {
			row[i] = c.String()
			continue
		}
		row[i] = Printable(fmt.Sprint(v))
	}
	t.rows = append(t.rows, row)
}

// Cell is text in probectl's own styles, for a table cell or a line: the one way colour reaches a
// cell. Each part's text passes Printable before its style is applied, so a server's text in a
// Cell is shown, never obeyed.
type Cell struct{ parts []cellPart }

type cellPart struct {
	style  lipgloss.Style
	styled bool
	text   string
}

// Styled is text in one of Styles' styles.
func Styled(style lipgloss.Style, text string) Cell {
	return Cell{parts: []cellPart{{style: style, styled: true, text: text}}}
}

// Plain is text without a style, to join with styled parts (Then).
func Plain(text string) Cell { return Cell{parts: []cellPart{{text: text}}} }

// Then is c followed by more.
func (c Cell) Then(more Cell) Cell {
	return Cell{parts: append(append([]cellPart(nil), c.parts...), more.parts...)}
}

// String is the cell's text, sanitized, then styled.
func (c Cell) String() string {
	var b strings.Builder
	for _, p := range c.parts {
		text := Printable(p.text)
		if p.styled {
			text = p.style.Render(text)
		}
		b.WriteString(text)
	}
	return b.String()
}

// Render writes the table. On a terminal of known width (a writer with a Width method, as the
// streams of System give on a terminal) a table wider than the terminal first wraps its cells at
// word boundaries; when even that does not fit (long times, URLs), it is written as one block of
// "COLUMN  value" lines per row, as psql's expanded display does. Elsewhere (a pipe, a file)
// lines stay whole, so grep and cut see one row per line.
func (t *Table) Render() error {
	out, err := t.render(0)
	if err != nil {
		return err
	}
	if width := widthOf(t.w); width > 0 && widest(out) > width {
		if out, err = t.render(width); err != nil {
			return err
		}
		if widest(out) > width {
			out = t.records()
		}
	}
	if _, err := io.WriteString(t.w, out); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// render lays the table out in columns, wrapping cells to fit width when it is above zero.
func (t *Table) render(width int) (string, error) {
	var buf bytes.Buffer
	opts := []tablewriter.Option{
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	}
	if width > 0 {
		opts = append(opts, tablewriter.WithMaxWidth(width),
			tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithHeaderAutoWrap(tw.WrapNormal))
	}
	tbl := tablewriter.NewTable(&buf, opts...)
	tbl.Header(t.header)
	if err := tbl.Bulk(t.rows); err != nil {
		return "", fmt.Errorf("render table: %w", err)
	}
	if err := tbl.Render(); err != nil {
		return "", fmt.Errorf("render table: %w", err)
	}
	// The padding that separates columns would leave trailing blanks on every line.
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	return out.String(), nil
}

// records writes each row as a block of "COLUMN  value" lines, blocks apart by a blank line.
func (t *Table) records() string {
	pad := 0
	for _, h := range t.header {
		pad = max(pad, lipgloss.Width(h))
	}
	var out strings.Builder
	for i, row := range t.rows {
		if i > 0 {
			out.WriteByte('\n')
		}
		for j, h := range t.header {
			value := ""
			if j < len(row) {
				value = row[j]
			}
			out.WriteString(strings.TrimRight(h+strings.Repeat(" ", pad-lipgloss.Width(h)+2)+value, " "))
			out.WriteByte('\n')
		}
	}
	return out.String()
}

// widest is the display width of the widest line of s (colour codes take no room).
func widest(s string) int {
	w := 0
	for line := range strings.Lines(s) {
		w = max(w, lipgloss.Width(strings.TrimRight(line, "\n")))
	}
	return w
}
