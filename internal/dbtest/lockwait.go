package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier is what WaitForLockWait reads pg_stat_activity through (a pool, a connection, a tx).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// WaitForLockWait waits, up to 30 s, until a session of db's database waits for a lock while
// running a statement whose text contains like ("" for any statement), and fails the test with
// msg otherwise. (A row lock's wait is on a transaction id, which names no database: the
// session says which.) A query that fails is a wait not seen yet, tried again 5 ms later.
func WaitForLockWait(t testing.TB, db Querier, like, msg string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var n int
		err := db.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			  AND query LIKE '%' || $1::text || '%' AND pid <> pg_backend_pid()`, like).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (last read: %d sessions, %v)", msg, n, err)
		}
		<-tick.C
	}
}
