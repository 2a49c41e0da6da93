package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAFileThatHoldsWhatTheTestMadePasses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	require.NoError(t, os.WriteFile(path, []byte("a\nb\n"), 0o644))
	Require(t, path, []byte("a\nb\n"))
}

func TestTheFirstDifferenceOfALargeFileNamesItsLine(t *testing.T) {
	require.Equal(t, `line 2 is "b"; the test made "c"`, firstDifference([]byte("a\nb\n"), []byte("a\nc\n")))
	require.Equal(t, `line 3 is ""; the test made "d"`, firstDifference([]byte("a\nb\n"), []byte("a\nb\nd")))
	require.Equal(t, `the test's output ends before line 3, which is ""`, firstDifference([]byte("a\nb\n"), []byte("a\nb")))
	require.Equal(t, `the file ends before line 2; the test made "b"`, firstDifference([]byte("a"), []byte("a\nb")))
}
