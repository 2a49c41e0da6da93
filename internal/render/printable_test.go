package render

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrintableReplacesWhatATerminalWouldObey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "search the web", Printable("search the web"))
	require.Equal(t, "工具 ok", Printable("工具 ok"))
	require.Equal(t, "\ufffd[2J\ufffd[1Aok\ufffdhidden", Printable("\x1b[2J\x1b[1Aok\rhidden"))
	require.Equal(t, "a\ufffdb", Printable("a\u202eb"), "a right-to-left override reorders what follows")
}
