package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"

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

// Row adds one row; values are formatted with %v.
func (t *Table) Row(values ...any) {
	row := make([]string, len(values))
	for i, v := range values {
		row[i] = fmt.Sprint(v)
	}
	t.rows = append(t.rows, row)
}

// Len is the number of rows added so far.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table.
func (t *Table) Render() error {
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
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
	)
	tbl.Header(t.header)
	if err := tbl.Bulk(t.rows); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	// The padding that separates columns would leave trailing blanks on every line.
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	if _, err := io.WriteString(t.w, out.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}
