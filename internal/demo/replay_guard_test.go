package demo

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The incident's order exists for the replay and the tests only: no command but the demo may
// call probe.ReplayIncident (no flag of run round, no release setting). This test fails when
// another file of the module starts calling it.
func TestOnlyTheDemoReplaysTheIncidentsOrder(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	allowed := []string{"internal/demo/incident.go", "probe/order_test.go", "probe/replay.go", "probe/replay_test.go"}
	var callers []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "ReplayIncident(") {
			rel, _ := filepath.Rel(root, path)
			callers = append(callers, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	callers = slices.DeleteFunc(callers, func(p string) bool { return p == "internal/demo/replay_guard_test.go" })
	require.ElementsMatch(t, allowed, callers)
}
