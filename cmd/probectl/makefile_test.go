package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// makeRecipes reads the Makefile's targets and, for each, its recipe and the targets it depends on.
func makeRecipes(t *testing.T) (recipes map[string][]string, deps map[string][]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	recipes, deps = map[string][]string{}, map[string][]string{}
	target := ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "\t") && target != "":
			recipes[target] = append(recipes[target], line)
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "."):
		default:
			name, rest, ok := strings.Cut(line, ":")
			if !ok || strings.Contains(name, "=") || strings.ContainsAny(name, " \t") {
				target = ""
				continue
			}
			target = name
			deps[name] = strings.Fields(rest)
		}
	}
	return recipes, deps
}

// TestMakeTestLeavesGoreleaserToReleaseCheck: compiling goreleaser took 14 of the 20 minutes of a
// first `make test` on a fresh machine. Its config check belongs to release-check, which CI runs
// and which builds goreleaser anyway.
func TestMakeTestLeavesGoreleaserToReleaseCheck(t *testing.T) {
	t.Parallel()
	recipes, deps := makeRecipes(t)
	require.NotEmpty(t, recipes["test"])
	seen := map[string]bool{}
	var walk func(target string)
	walk = func(target string) {
		if seen[target] {
			return
		}
		seen[target] = true
		for _, line := range recipes[target] {
			require.NotContains(t, line, "goreleaser", "make test runs it through %s", target)
		}
		for _, d := range deps[target] {
			walk(d)
		}
	}
	walk("test")
	require.True(t, seen["lint"], "make test lints")
	require.Contains(t, strings.Join(recipes["release-check"], "\n"), "goreleaser/v2@v2.15.1 check",
		"release-check checks the goreleaser config")
}
