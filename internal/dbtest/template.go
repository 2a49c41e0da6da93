package dbtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Template is a database prepared once per test binary (typically migrated)
// and cloned for each test, which is much faster than preparing a database
// per test. Declare one per schema as a package variable:
//
//	var migrated = dbtest.NewTemplate("probectl_tmpl", testfactory.Migrate)
type Template struct {
	name  string
	setup func(ctx context.Context, url string) error

	once   sync.Once
	dbName string // the template database, once prepared
	err    error  // why preparing it failed
}

// errSetupPanicked stands in for the result of a setup that panicked, so
// later tests fail instead of cloning an unprepared database.
var errSetupPanicked = errors.New("setup panicked")

// NewTemplate declares a template database called name (a lower-case
// identifier of at most 40 bytes; the database gets a per-process suffix).
// Nothing happens until the first NewDB, which creates it and runs setup on
// it with its URL. setup must close every connection it opens before
// returning: clones cannot be made while the template is in use. An invalid
// name panics, since it is a mistake in the test code.
func NewTemplate(name string, setup func(ctx context.Context, url string) error) *Template {
	if !validTemplateName(name) {
		panic(fmt.Sprintf("dbtest: template name %q is not a lower-case identifier of at most %d bytes", name, maxTemplateName))
	}
	return &Template{name: name, setup: setup}
}

// NewDB returns the URL of a new database cloned from the template, dropped
// when the test ends. Safe for parallel tests; the first call prepares the
// template and the others wait for it.
func (tp *Template) NewDB(t testing.TB) string {
	t.Helper()
	s := serverFor(t)
	tp.once.Do(func() {
		tp.err = errSetupPanicked
		tp.dbName, tp.err = s.prepareTemplate(templateDBName(tp.name), tp.setup)
	})
	if tp.err != nil {
		t.Fatalf("dbtest: prepare template %s: %v", tp.name, tp.err)
	}
	return newDB(t, s, tp.dbName)
}

// Pool is Pool on a fresh database cloned from the template: what most tests
// start from.
func (tp *Template) Pool(t testing.TB, opts ...PoolOption) *pgxpool.Pool {
	t.Helper()
	return Pool(t, tp.NewDB(t), opts...)
}

// prepareTemplate creates database name, runs setup on it and freezes it:
// marked as a template that takes no connections, with any left by setup
// terminated, so clones never find it "accessed by other users".
func (s *server) prepareTemplate(name string, setup func(ctx context.Context, url string) error) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.createDB(ctx, name, ""); err != nil {
		return "", err
	}
	s.track(name)
	if err := setup(ctx, s.dbURL(name)); err != nil {
		return "", fmt.Errorf("set up: %w", err)
	}
	if _, err := s.admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", fmt.Errorf("mark %s as a template: %w", name, err)
	}
	const terminate = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()"
	if _, err := s.admin.Exec(ctx, terminate, name); err != nil {
		return "", fmt.Errorf("disconnect from template %s: %w", name, err)
	}
	return name, nil
}
