package queries_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// migrated is a template database with every migration applied; each test clones it.
var migrated = dbtest.NewTemplate("queries_tmpl", testfactory.Migrate)

// upOnEmptyDB is a database of the test's own, migrated by a provider the test can step down and
// up again (the migrations' rollback tests).
func upOnEmptyDB(t *testing.T) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t), dbtest.MaxConns(4))
	p, err := queries.Provider(pool)
	require.NoError(t, err)
	_, err = p.Up(t.Context())
	require.NoError(t, err)
	return pool, p
}
