package demo

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	module       = "github.com/probectl/probectl"
	incidentPkg  = module + "/probe/incident"
	onlyImporter = module + "/internal/demo"
)

// The incident's order of writes lives in probe/incident, outside the shipped probe package, and
// the binary may reach it only through the demo (`demo --reproduce-incident`): no command, no flag
// of run round, no release setting. Go's internal/ rule cannot say that inside one module, so this
// test asks the toolchain which of the binary's packages import it (tests excluded: probe's tests
// use it to show that the order tests can fail). It fails when another package starts importing it.
func TestOnlyTheDemoImportsTheIncidentsOrder(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	binary := importers(t, root, "./cmd/probectl")
	require.Contains(t, binary.all, incidentPkg, "the demo replays the incident: the binary links probe/incident")
	require.Equal(t, []string{onlyImporter}, binary.of[incidentPkg],
		"among the binary's packages only internal/demo may import probe/incident")
	// Every package of the module, in case one is not linked into the binary yet.
	everything := importers(t, root, "./...")
	require.Equal(t, []string{onlyImporter}, everything.of[incidentPkg],
		"among the module's packages only internal/demo may import probe/incident")
}

// deps is what `go list -deps` says about some packages: every package and who imports each one.
type deps struct {
	all []string
	of  map[string][]string // import path -> sorted importers
}

func importers(t *testing.T, root, pattern string) deps {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test=false", "-f", `{{.ImportPath}} {{join .Imports " "}}`, pattern)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps %s", pattern)
	d := deps{of: map[string][]string{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		d.all = append(d.all, fields[0])
		for _, imp := range fields[1:] {
			d.of[imp] = append(d.of[imp], fields[0])
		}
	}
	for _, v := range d.of {
		slices.Sort(v)
	}
	return d
}
