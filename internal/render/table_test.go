package render

import (
	"bytes"
	"testing"

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
