package throughput

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// migrated holds probectl's schema and River's tables in one database, as a worker's would
// (probectl migrate applies both).
var migrated = dbtest.NewTemplate("throughput_tmpl", testfactory.Migrate)

// testSQL reads a statement of testdata/.
func testSQL(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// envInt reads a positive size from the environment, def when unset.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	require.NoError(b, err, "%s", name)
	require.Positive(b, n, "%s", name)
	return n
}
