package render

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTableAlignsColumnsWithoutBorders(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tbl := NewTable(&buf, "SLUG", "KIND", "NEXT CHECK")
	tbl.Row("alpha", "mcp", "2026-11-29T08:00:00Z")
	tbl.Row("a-much-longer-slug", "http", "-")
	require.NoError(t, tbl.Render())
	want := "" +
		"SLUG                KIND  NEXT CHECK\n" +
		"alpha               mcp   2026-11-29T08:00:00Z\n" +
		"a-much-longer-slug  http  -\n"
	require.Equal(t, want, buf.String())
}

func TestATableFitsTheTerminal(t *testing.T) {
	t.Parallel()
	long := "an open job (in flight for at most 15m); if it never finishes it is closed as abandoned then"
	write := func(w io.Writer) {
		tbl := NewTable(w, "SLUG", "STATUS", "WHY")
		tbl.Row("bravo-open", "open_job", long)
		tbl.Row("alpha", "due", "-")
		require.NoError(t, tbl.Render())
	}
	var term bytes.Buffer
	write(WithWidth(&term, 60))
	for _, line := range strings.Split(strings.TrimRight(term.String(), "\n"), "\n") {
		assert.LessOrEqual(t, len(line), 60, "%q is wider than the terminal", line)
	}
	assert.Contains(t, term.String(), "bravo-open")
	assert.Contains(t, strings.Join(strings.Fields(term.String()), " "), "closed as abandoned then", "nothing is cut off")

	var pipe bytes.Buffer
	write(&pipe)
	assert.Contains(t, pipe.String(), long, "a pipe keeps each row on one line")
}

func TestATableTooWideToWrapBecomesRecords(t *testing.T) {
	t.Parallel()
	var term bytes.Buffer
	tbl := NewTable(WithWidth(&term, 60), "SERVER", "FIRST REQUESTED", "SECOND REQUESTED", "REQUEST GAP", "CLASS")
	tbl.Row("status-page", "2026-10-07T20:55:02.000Z", "2026-10-07T20:55:40.236Z", "38.236s", "after_finish")
	tbl.Row("weather", "2026-10-07T20:55:01.000Z", "2026-10-07T20:55:44.168Z", "43.168s", "after_finish")
	require.NoError(t, tbl.Render())
	assert.Equal(t, ""+
		"SERVER            status-page\n"+
		"FIRST REQUESTED   2026-10-07T20:55:02.000Z\n"+
		"SECOND REQUESTED  2026-10-07T20:55:40.236Z\n"+
		"REQUEST GAP       38.236s\n"+
		"CLASS             after_finish\n"+
		"\n"+
		"SERVER            weather\n"+
		"FIRST REQUESTED   2026-10-07T20:55:01.000Z\n"+
		"SECOND REQUESTED  2026-10-07T20:55:44.168Z\n"+
		"REQUEST GAP       43.168s\n"+
		"CLASS             after_finish\n", term.String())
}

// A cell's colour is probectl's own, never a server's: a colour sequence in a value is shown as
// escapes, and only a Cell (Styled) is coloured, its text sanitized before its style applies.
func TestATableCellCarriesOnlyOurColours(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	green := lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	tbl := NewTable(&out, "A", "B")
	tbl.Row("\x1b[32mok\x1b[0m from server", Styled(green, "ok\x1b[2J").Then(Plain(", \x1b[31mx")))
	require.NoError(t, tbl.Render())
	assert.Contains(t, out.String(), `\u001b[32mok\u001b[0m from server`)
	assert.Contains(t, out.String(), green.Render(`ok\u001b[2J`)+`, \u001b[31mx`)
}
