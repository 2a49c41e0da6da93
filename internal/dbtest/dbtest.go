// Package dbtest gives every test its own PostgreSQL database, cloned in
// milliseconds from a template that is set up (migrated) once per test
// binary, so tests run against a real server, in parallel, without seeing
// each other's rows.
//
// The server is the one named by PROBECTL_TEST_DATABASE_URL (its role needs
// CREATEDB), or else a throwaway cluster started through pglaunch on first
// use and stopped by Main. A package using dbtest therefore needs
//
//	func TestMain(m *testing.M) { dbtest.Main(m) }
//
// When no server can be had, tests fail rather than skip: a missing database
// must not pass for a green run.
package dbtest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/pgutc"
)

// EnvURL names the environment variable that points tests at an existing
// server (a postgres:// URL whose role may create databases) instead of a
// throwaway one, e.g. a CI service container.
const EnvURL = "PROBECTL_TEST_DATABASE_URL"

// mainRunning records that Main wraps the tests, so a throwaway server we
// start will be stopped; without it we refuse to start one.
var mainRunning atomic.Bool

// Main runs the tests and then releases what they shared: the throwaway
// server, or the templates left on a server named by EnvURL. Call it from
// TestMain; it does not return.
func Main(m *testing.M) {
	mainRunning.Store(true)
	code := m.Run()
	if err := release(); err != nil {
		fmt.Fprintf(os.Stderr, "dbtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// NewEmptyDB returns the URL of a new database with nothing in it, for tests
// that build their own schema. It is dropped when the test ends.
func NewEmptyDB(t testing.TB) string {
	t.Helper()
	return newDB(t, serverFor(t), "")
}

// Pool opens a pool on url (usually from NewDB or NewEmptyDB) and closes it
// when the test ends, before the database is dropped. It is the one way tests
// open a pool; opts adjust the pool's configuration before it opens.
func Pool(t testing.TB, url string, opts ...PoolOption) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("dbtest: parse %s: %v", url, err)
	}
	// As queries.Connect does: scanned times are UTC, so tests compare what the binary sees.
	cfg.AfterConnect = pgutc.AfterConnect
	for _, opt := range opts {
		opt(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("dbtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// PoolOption adjusts a pool's configuration before Pool opens it.
type PoolOption func(*pgxpool.Config)

// MaxConns caps the pool at n connections.
func MaxConns(n int32) PoolOption { return func(c *pgxpool.Config) { c.MaxConns = n } }

// Tracer traces every statement the pool's connections send.
func Tracer(tr pgx.QueryTracer) PoolOption {
	return func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr }
}

// Dialer opens the pool's connections (a test that holds or counts them).
func Dialer(dial pgconn.DialFunc) PoolOption {
	return func(c *pgxpool.Config) { c.ConnConfig.DialFunc = dial }
}

// newDB creates a uniquely named database, cloned from template unless that
// is empty, and drops it (disconnecting stragglers) in the test's cleanup.
func newDB(t testing.TB, s *server, template string) string {
	t.Helper()
	name := testDBName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.createDB(ctx, name, template); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.dropDB(ctx, name); err != nil {
			t.Errorf("dbtest: %v", err)
		}
	})
	return s.dbURL(name)
}

// serverFor fails the test, never skips it, when there is no server.
func serverFor(t testing.TB) *server {
	t.Helper()
	s, err := sharedServer()
	if err != nil {
		t.Fatalf("dbtest: no PostgreSQL server for tests: %v", err)
	}
	return s
}
