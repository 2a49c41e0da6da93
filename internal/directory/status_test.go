package directory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Several servers change status all or none: an unknown slug, wherever it stands in the list,
// leaves the known ones unchanged and nothing recorded; named twice, a slug changes once.
func TestSetStatusesChangesAllOrNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	for _, slug := range []string{"a", "b", "c"} {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug})
	}
	status := func(slug string) string {
		s, err := queries.GetServerBySlug(ctx, pool, slug)
		require.NoError(t, err)
		return s.Status
	}
	recorded := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM server_status_changes").Scan(&n))
		return n
	}

	_, err := directory.SetStatuses(ctx, pool, []string{"c", "nope", "a", "gone"}, "paused", "owner asked", "ana", nil)
	var unknown *directory.UnknownServersError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, []string{"nope", "gone"}, unknown.Slugs, "every unknown slug, in the order named")
	assert.ErrorContains(t, err, `no server with these slugs: "nope", "gone"; nothing was changed`)
	assert.Equal(t, "active", status("a"))
	assert.Equal(t, "active", status("c"))
	assert.Zero(t, recorded())

	changes, err := directory.SetStatuses(ctx, pool, []string{"c", "a", "c"}, "paused", "owner asked", "ana", nil)
	require.NoError(t, err)
	require.Len(t, changes, 2)
	assert.Equal(t, directory.StatusChange{Slug: "c", From: "active", To: "paused", Changed: true}, changes[0])
	assert.Equal(t, directory.StatusChange{Slug: "a", From: "active", To: "paused", Changed: true}, changes[1])
	assert.Equal(t, "active", status("b"))
	assert.Equal(t, 2, recorded())

	_, err = directory.SetStatuses(ctx, pool, nil, "paused", "x", "ana", nil)
	assert.ErrorContains(t, err, "name at least one server")
	many := make([]string, directory.MaxStatusChange+1)
	for i := range many {
		many[i] = fmt.Sprintf("s-%d", i)
	}
	_, err = directory.SetStatuses(ctx, pool, many, "paused", "x", "ana", nil)
	var invalid *directory.InvalidError
	require.ErrorAs(t, err, &invalid)
	assert.ErrorContains(t, err, fmt.Sprintf("at most %d servers change status at once, got %d", directory.MaxStatusChange, len(many)))
}

// Two status changes that name the same servers in opposite orders both complete: rows are locked
// in slug order, so neither waits for the other while holding what the other waits for (see
// heldBetweenServers); locked in the order named, each would hold one row and ask for the other's,
// and PostgreSQL would end one as a deadlock.
func TestSetStatusesInOppositeOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	heldBetweenServers(t,
		func(ctx context.Context, pool *pgxpool.Pool) error {
			_, err := directory.SetStatuses(ctx, pool, []string{"a", "b"}, "paused", "x", "ana", nil)
			return err
		},
		func(ctx context.Context, pool *pgxpool.Pool) error {
			_, err := directory.SetStatuses(ctx, pool, []string{"b", "a"}, "delisted", "x", "ana", nil)
			return err
		})
}

// A re-check and a status change that name the same servers in opposite orders both complete:
// both write the servers' rows in slug order (found in review: the re-check wrote them in the
// order named, so `servers recheck b a` beside `servers pause a b` could deadlock, and PostgreSQL
// ended one with exit 3).
func TestARecheckAndAStatusChangeInOppositeOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	heldBetweenServers(t,
		func(ctx context.Context, pool *pgxpool.Pool) error {
			_, err := directory.Recheck(ctx, pool, []string{"b", "a"}, nil)
			return err
		},
		func(ctx context.Context, pool *pgxpool.Pool) error {
			_, err := directory.SetStatuses(ctx, pool, []string{"a", "b"}, "paused", "x", "ana", nil)
			return err
		})
}

// heldBetweenServers runs two changes of servers a and b at once and requires both to complete. A
// trigger holds each change after its first server's update, on an advisory lock the test holds,
// until both wait (in the trigger, or for the other's row); then it lets them go. Two changes that
// take the rows in opposite orders each hold one row then and ask for the other's: a deadlock.
func heldBetweenServers(t *testing.T, first, second func(context.Context, *pgxpool.Pool) error) {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	for _, slug := range []string{"a", "b"} {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug})
	}
	_, err := pool.Exec(ctx, `CREATE FUNCTION hold_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER hold_update AFTER UPDATE ON servers FOR EACH ROW EXECUTE FUNCTION hold_update()`)
	require.NoError(t, err) // test-only: hold each change between its servers
	gate, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer gate.Release()
	_, err = gate.Exec(ctx, "SELECT pg_advisory_lock(4242)")
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, change := range []func(context.Context, *pgxpool.Pool) error{first, second} {
		wg.Go(func() { errs[i] = change(ctx, pool) })
	}
	require.Eventually(t, func() bool {
		var waiting int
		err := pool.QueryRow(ctx, `SELECT count(DISTINCT l.pid) FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database()`).Scan(&waiting)
		return err == nil && waiting == 2
	}, time.Minute, 10*time.Millisecond, "both changes wait")
	_, err = gate.Exec(ctx, "SELECT pg_advisory_unlock(4242)")
	require.NoError(t, err)
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
}
