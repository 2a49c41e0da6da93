package queries

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A migration that has been applied somewhere is never applied again: goose records its version.
// Editing it would leave every database that ran the old text with the old schema while `migrate`
// says it is up to date (and deploy verify's drift check would fail for good). So the text of
// every migration is pinned here: a change goes in a new migration. A new migration is added to
// testdata/migrations.sha256 (`cd queries/migrations && sha256sum NEW.sql >> ../testdata/migrations.sha256`).
func TestMigrationsAreNeverEditedOnlyAdded(t *testing.T) {
	t.Parallel()
	pinned := map[string]string{}
	data, err := os.ReadFile("testdata/migrations.sha256")
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "bad line %q", line)
		pinned[name] = sum
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	require.NoError(t, err)
	require.Len(t, names, len(pinned), "every migration is pinned, and every pinned one still ships")
	for _, file := range names {
		body, err := fs.ReadFile(migrationFiles, file)
		require.NoError(t, err)
		sum := sha256.Sum256(body)
		name := path.Base(file)
		want, ok := pinned[name]
		require.True(t, ok, "%s is not pinned: add its sha256 to testdata/migrations.sha256", name)
		require.Equal(t, want, hex.EncodeToString(sum[:]),
			"%s changed after it was pinned: put the change in a new migration", name)
	}
}
