package notices

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
)

// licenceFile is a file a module's authors ship their terms in: LICENSE, LICENCE, UNLICENSE, COPYING or
// NOTICE, in any case, with any extension.
var licenceFile = regexp.MustCompile(`(?i)^((un)?licen[cs]e|copying|notice)([._-].*)?$`)

// module is one module linked into the binary, and where the go command keeps its files.
type module struct{ path, version, dir string }

func TestNoticesAreCurrent(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	want := render(t, linked(t, root), goroot(t, root))
	path := filepath.Join(root, "THIRD_PARTY_NOTICES")
	golden.Require(t, path, want,
		"THIRD_PARTY_NOTICES must list the licences of the modules probectl links (go.mod changed?): run make generate")
}

// linked lists the modules whose packages go into cmd/probectl, on every platform the release
// builds for, sorted by path.
func linked(t *testing.T, root string) []module {
	seen := map[string]module{}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f",
			`{{with .Module}}{{if not .Main}}{{.Path}}|{{.Version}}|{{.Dir}}{{end}}{{end}}`, "./cmd/probectl")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.Output()
		require.NoError(t, err, "go list")
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if parts := strings.Split(line, "|"); len(parts) == 3 {
				seen[parts[0]] = module{path: parts[0], version: parts[1], dir: parts[2]}
			}
		}
	}
	out := make([]module, 0, len(seen))
	for _, m := range seen {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b module) int { return strings.Compare(a.path, b.path) })
	return out
}

func goroot(t *testing.T, root string) string {
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// render writes the Go toolchain's licence (its runtime and standard library are in the binary),
// then each module's licence files, in order.
func render(t *testing.T, mods []module, goroot string) []byte {
	var b bytes.Buffer
	b.WriteString("probectl is licensed under the Apache License 2.0 (LICENSE). It contains the Go runtime and\n" +
		"standard library and the modules below, under their own terms, reproduced here as they ship them.\n")
	section(t, &b, "Go (runtime and standard library)", goroot, []string{"LICENSE"})
	for _, m := range mods {
		entries, err := os.ReadDir(m.dir)
		require.NoError(t, err, "module %s@%s is not in the module cache: run go mod download", m.path, m.version)
		var files []string
		for _, e := range entries {
			if !e.IsDir() && licenceFile.MatchString(e.Name()) {
				files = append(files, e.Name())
			}
		}
		require.NotEmpty(t, files, "module %s@%s ships no licence file: find its terms before depending on it", m.path, m.version)
		section(t, &b, m.path+" "+m.version, m.dir, files)
	}
	return b.Bytes()
}

func section(t *testing.T, b *bytes.Buffer, title, dir string, files []string) {
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		fmt.Fprintf(b, "\n%s\n%s (%s)\n%s\n\n", strings.Repeat("=", 78), title, name, strings.Repeat("=", 78))
		b.Write(bytes.TrimRight(data, "\n"))
		b.WriteString("\n")
	}
}
