package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheREADMELayoutListsEveryPackage keeps the README's layout table true: every directory that
// holds Go files has its row, and every path a row names exists.
func TestTheREADMELayoutListsEveryPackage(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	listed := layoutPaths(t, string(readme))

	var missing []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir = filepath.ToSlash(dir)
		if !slices.Contains(listed, dir) && !slices.Contains(missing, dir) {
			missing = append(missing, dir)
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, missing, "packages the README's layout table does not list: add a row under ## Layout")

	for _, p := range listed {
		_, err := os.Stat(filepath.Join(root, p))
		require.NoError(t, err, "the README's layout table names %s, which does not exist", p)
	}
}

// layoutPaths returns the paths named in the first column of the table under "## Layout",
// without a trailing slash.
func layoutPaths(t *testing.T, readme string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Layout\n")
	require.True(t, ok, "README.md has no ## Layout section")
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	code := regexp.MustCompile("`([^`]+)`")
	var out []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || cells[1] == " path " {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, strings.TrimSuffix(m[1], "/"))
		}
	}
	require.NotEmpty(t, out, "no rows in the README's layout table")
	return out
}
