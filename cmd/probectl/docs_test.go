package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsAreCurrent fails when the man pages or the command reference under docs/ no longer say
// what the command tree says: a flag, a command or a help text changed without `make generate`.
func TestDocsAreCurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := runCLI(t, "docs", "--dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	for _, sub := range []string{"man", "reference"} {
		want := readDir(t, filepath.Join(dir, sub))
		require.NotEmpty(t, want)
		got := readDir(t, filepath.Join(repoRoot(t), "docs", sub))
		for name, content := range want {
			if assert.Contains(t, got, name, "docs/%s/%s is missing: run make generate", sub, name) {
				assert.Equal(t, content, got[name], "docs/%s/%s is stale: run make generate", sub, name)
			}
		}
		for name := range got {
			assert.Contains(t, want, name, "docs/%s/%s documents no command: run make generate", sub, name)
		}
	}
}

func TestDocsNeedsADirectory(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "docs")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, "--dir")
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	require.NoError(t, err)
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(data)
	}
	return out
}
