// Package golden compares what a test produced with a file kept beside it (a golden file), and
// rewrites the file instead when the test runs with -update:
//
//	go test -run TestDeployList ./cmd/probectl/ -update
//
// It registers the -update flag, so a test package that imports it must not define its own.
// Only tests import it: it is not part of the binary.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files the tests compare with")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Require fails the test unless the file at path holds exactly got; under -update it writes got
// there first. hint says how to make the file current when it is stale (for a file another
// command also writes); it defaults to running the test with -update.
func Require(t testing.TB, path string, got []byte, hint ...string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	how := "run the test with -update"
	if len(hint) > 0 {
		how = hint[0]
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file %s is missing: %s", path, how)
	if len(want) > maxDiffed || len(got) > maxDiffed {
		// A whole large file in the failure says less than the first line that differs.
		if !bytes.Equal(want, got) {
			t.Fatalf("golden file %s is stale (%s): %s", path, how, firstDifference(want, got))
		}
		return
	}
	require.Equal(t, string(want), string(got), "golden file %s is stale: %s", path, how)
}

// maxDiffed is the largest file whose difference Require prints whole.
const maxDiffed = 64 << 10

// firstDifference names the first line where want and got part.
func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(w), len(g)) {
		switch {
		case i >= len(g):
			return fmt.Sprintf("the test's output ends before line %d, which is %q", i+1, w[i])
		case i >= len(w):
			return fmt.Sprintf("the file ends before line %d; the test made %q", i+1, g[i])
		case w[i] != g[i]:
			return fmt.Sprintf("line %d is %q; the test made %q", i+1, w[i], g[i])
		}
	}
	return "the same lines" // unreachable: the files differ
}
