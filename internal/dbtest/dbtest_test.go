package dbtest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// widgetSetups counts runs of the widgets template's setup.
var widgetSetups atomic.Int32

var widgets = dbtest.NewTemplate("dbtest_widgets", func(ctx context.Context, url string) error {
	widgetSetups.Add(1)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `create table widget (name text primary key); insert into widget values ('seed')`)
	return err
})

func TestParallelTestsEachGetTheirOwnDatabase(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		names = map[string]bool{}
	)
	t.Run("group", func(t *testing.T) {
		for _, table := range []string{"alpha", "beta", "gamma", "delta"} {
			t.Run(table, func(t *testing.T) {
				t.Parallel()
				pool := dbtest.Pool(t, dbtest.NewEmptyDB(t))
				ctx := t.Context()
				_, err := pool.Exec(ctx, "create table "+table+" (id int)")
				require.NoError(t, err)

				require.Equal(t, []string{table}, publicTables(t, pool))
				mu.Lock()
				names[currentDatabase(t, pool)] = true
				mu.Unlock()
			})
		}
	})
	require.Len(t, names, 4, "databases handed out: %v", names)
}

func TestTableInOneDatabaseIsInvisibleInAnother(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	first := dbtest.Pool(t, dbtest.NewEmptyDB(t))
	second := dbtest.Pool(t, dbtest.NewEmptyDB(t))

	_, err := first.Exec(ctx, "create table only_in_first (id int)")
	require.NoError(t, err)

	require.Equal(t, []string{"only_in_first"}, publicTables(t, first))
	require.Empty(t, publicTables(t, second))
}

func TestTemplateSetupRunsOnceAndEveryCloneStartsFromIt(t *testing.T) {
	t.Parallel()
	t.Run("group", func(t *testing.T) {
		for _, name := range []string{"one", "two", "three", "four"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				pool := dbtest.Pool(t, widgets.NewDB(t))
				ctx := t.Context()
				_, err := pool.Exec(ctx, "insert into widget values ($1)", name)
				require.NoError(t, err)

				rows, err := pool.Query(ctx, "select name from widget order by name")
				require.NoError(t, err)
				got, err := pgx.CollectRows(rows, pgx.RowTo[string])
				require.NoError(t, err)
				require.ElementsMatch(t, []string{"seed", name}, got)
			})
		}
	})
	require.Equal(t, int32(1), widgetSetups.Load())
}

func TestDatabaseIsDroppedWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var url string
	t.Run("user", func(t *testing.T) {
		url = dbtest.NewEmptyDB(t)
	})

	_, err := pgx.Connect(t.Context(), url)

	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "connecting to a dropped database: %v", err)
	require.Equal(t, "3D000", pgErr.Code, "want invalid_catalog_name, got %v", err)
}

func publicTables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(),
		"select table_name::text from information_schema.tables where table_schema = 'public' order by 1")
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

func currentDatabase(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var name string
	require.NoError(t, pool.QueryRow(t.Context(), "select current_database()").Scan(&name))
	return name
}
