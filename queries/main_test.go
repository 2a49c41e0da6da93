package queries_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// migrated is a template database with every migration applied; each test clones it.
var migrated = dbtest.NewTemplate("queries_tmpl", queries.MigrateURL)

// newPool returns a pool on a fresh migrated database, closed when the test ends.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := queries.Connect(context.Background(), migrated.NewDB(t), "test", queries.ConnectOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
