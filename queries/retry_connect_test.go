package queries_test

import (
	"context"
	"log/slog"
	neturl "net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/queries"
)

// A database that refuses new connections for a moment (ALLOW_CONNECTIONS off, as a failover, a
// restore or an operator may leave it: FATAL 55000 "not currently accepting connections") is a
// connection that could not be made: a write is tried again within its budget. It was taken for
// an answer about the data (class 55 is not a connection class), so a finish spooled at once, or,
// its spool unwritable, lost its result. A connection refused for good (a wrong password, a
// database that is not there) is not tried again.
func TestAWriteIsTriedAgainWhileTheDatabaseRefusesConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	db := u.Path[1:]
	// The database's connections are switched off from another one (PostgreSQL refuses it from
	// inside): the server's maintenance database.
	other := *u
	other.Path = "/postgres"
	admin := dbtest.Pool(t, other.String(), dbtest.MaxConns(1))
	_, err = admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" ALLOW_CONNECTIONS false")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" ALLOW_CONNECTIONS true")
	})

	fresh := dbtest.Pool(t, url) // a pool connects when first asked: no connection made yet
	attempts := 0
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = queries.Retry(bctx, 5*time.Second, slog.New(slog.DiscardHandler), "test write", func(ctx context.Context) error {
		attempts++
		if attempts == 2 { // the first attempt was refused: the database takes connections again
			if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" ALLOW_CONNECTIONS true"); err != nil {
				return err
			}
		}
		_, err := fresh.Exec(ctx, "SELECT 1")
		return err
	})
	require.NoError(t, err)
	require.Equal(t, 2, attempts)

	// Refusals that trying again cannot change: a role that is not there (28000), and one without
	// the CONNECT privilege (42501).
	role := "no_connect_" + db[len(db)-8:]
	_, err = admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	_, err = admin.Exec(ctx, "REVOKE CONNECT ON DATABASE "+pgx.Identifier{db}.Sanitize()+" FROM PUBLIC")
	require.NoError(t, err)
	for _, user := range []string{"no_such_role", role} {
		u.User = neturl.User(user)
		wrong := dbtest.Pool(t, u.String())
		attempts = 0
		err = queries.Retry(bctx, 5*time.Second, slog.New(slog.DiscardHandler), "test write", func(ctx context.Context) error {
			attempts++
			_, err := wrong.Exec(ctx, "SELECT 1")
			return err
		})
		require.Error(t, err)
		require.Equal(t, 1, attempts, "%s is not tried again: %v", user, err)
	}
}
