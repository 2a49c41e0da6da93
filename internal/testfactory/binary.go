package testfactory

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BuildProbectl builds the probectl binary into the test's temporary directory, for tests whose
// workers and rounds are real processes. It is built without VCS stamping, so it says "dev", the
// version the tests' releases name: in a git checkout Go records a pseudo-version from the commit,
// which probectl reports, and a worker would refuse a release of another version.
func BuildProbectl(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "probectl")
	out, err := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "github.com/probectl/probectl/cmd/probectl").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}
