package pglaunch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestStartServesQueriesAndStopRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c, err := Start(ctx, Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { c.Stop() })

	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	var one int
	require.NoError(t, conn.QueryRow(ctx, "select 1").Scan(&one))
	require.Equal(t, 1, one)
	require.NoError(t, conn.Close(ctx))

	require.NoError(t, c.Stop())
	require.NoDirExists(t, c.root)
	require.NoError(t, c.Stop(), "second stop")
	_, err = pgx.Connect(ctx, c.URL("postgres"))
	require.Error(t, err, "server still accepts connections after Stop")
}

func TestStartWithoutBinariesSaysWhatToInstall(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()

	_, err := Start(context.Background(), Options{BinDir: empty})

	require.ErrorIs(t, err, ErrNoBinaries)
	require.ErrorContains(t, err, empty)
	require.ErrorContains(t, err, "apt-get install postgresql")
}

func TestStartLeavesNoDirectoryWhenItFails(t *testing.T) {
	tmp := t.TempDir()
	for _, dir := range []string{filepath.Dir(tmp), tmp} { // reachable by the postgres user when we are root
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := Start(ctx, Options{})

	require.ErrorIs(t, err, context.Canceled)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "Start left something behind in TMPDIR")
}
