package probe

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// migrated is a template database with the schema applied; each test clones it.
var migrated = dbtest.NewTemplate("probe_tmpl", testfactory.Migrate)

// testSQL reads a statement the tests run themselves (testdata/*.sql): switches for the layers
// and a broken claim, which exist only in test databases.
func testSQL(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// testDB is a pool on a fresh migrated database.
func testDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return migrated.Pool(t, dbtest.MaxConns(8))
}

// installLocklessClaim switches layer 1 off in a test database: it replaces the claims there by
// the same claims without their lock: probe_claim (which the claim of the incident's time calls)
// without its advisory lock, the leasing claims (probe_claim_due, and the previous binary's
// probe_claim_lease) without their row locks. The shipped claims have no switch for it.
func installLocklessClaim(t testing.TB, db queries.DBTX) {
	t.Helper()
	ctx := context.Background()
	locks := map[string]string{
		"probe_claim":       "PERFORM pg_advisory_xact_lock(" + strconv.FormatInt(queries.ClaimLockKey, 10) + ");",
		"probe_claim_lease": "FOR UPDATE OF s SKIP LOCKED",
		"probe_claim_due":   "FOR UPDATE OF s SKIP LOCKED",
	}
	for name, lock := range locks {
		var def string
		require.NoError(t, db.QueryRow(ctx, testSQL(t, "claim_definition.sql"), name).Scan(&def))
		if !strings.Contains(def, lock) {
			// The leasing claim replaced by the claim of the incident's time: it calls probe_claim.
			require.NotContains(t, def, "pg_advisory_xact_lock_shared", "%s takes no %q", name, lock)
			continue
		}
		_, err := db.Exec(ctx, strings.Replace(def, lock, "", 1))
		require.NoError(t, err)
	}
}

// dropUniqueIndex switches layer 4 off in a test database: the unique index on open jobs.
func dropUniqueIndex(t testing.TB, db queries.DBTX) {
	t.Helper()
	_, err := db.Exec(context.Background(), testSQL(t, "drop_unique_index.sql"))
	require.NoError(t, err)
}

// okChecker answers every check with one request and outcome ok, and records each target.
type okChecker struct {
	mu      sync.Mutex
	checked []check.Target
	// during, if set, runs in the middle of each check.
	during func(ctx context.Context, t check.Target)
}

func (c *okChecker) Check(ctx context.Context, t check.Target) check.Result {
	start := time.Now().UTC()
	if c.during != nil {
		c.during(ctx, t)
	}
	c.mu.Lock()
	c.checked = append(c.checked, t)
	c.mu.Unlock()
	return check.Result{Outcome: check.OutcomeOK, Summary: "ok", StartedAt: start, FinishedAt: time.Now().UTC(),
		Requests: []check.Request{{Method: "GET", URL: t.URL, Status: 200, StartedAt: start}}}
}

// settings are small round settings for tests: one invocation, unsigned, spacing guard on.
func testSettings(finish string) Settings {
	s := settings.Default()
	s.Fanout, s.ClaimLimit, s.Concurrency = 0, 5, 3
	s.Finish = finish
	s.Version = "test"
	s.MaxDuration = settings.Duration(time.Minute)
	return s
}

// waitForLockWaiters returns once n sessions of the database wait for a lock. It polls the
// database's own view of who waits: the synchronisation is the lock, this only observes it.
func waitForLockWaiters(t testing.TB, db queries.DBTX, n int) {
	t.Helper()
	waitForLockWaitersOr(t, db, n, nil)
}

// waitForLockWaitersOr waits until n sessions wait for a lock or, counted with them, returned has.
func waitForLockWaitersOr(t testing.TB, db queries.DBTX, n int, returned *atomic.Int32) {
	t.Helper()
	q := testSQL(t, "lock_waiters.sql")
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got int
		require.NoError(t, db.QueryRow(context.Background(), q).Scan(&got))
		if returned != nil {
			got += int(returned.Load())
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d sessions to wait for a lock (%d do)", n, got)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// newSigner makes a signing key, registered in db unless db is nil.
func newSigner(t testing.TB, db queries.DBTX) *attest.Signer {
	t.Helper()
	pub, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	s := attest.NewSigner(priv)
	if db != nil {
		require.NoError(t, queries.RegisterSigningKey(context.Background(), db, s.KeyID(), pub))
	}
	return s
}
