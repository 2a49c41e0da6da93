package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("audit_tmpl", testfactory.Migrate)

// t0 is a fixed moment the tests place their jobs around (the incident's first parallel round).
var t0 = time.Date(2026, 10, 7, 20, 55, 0, 0, time.UTC)

// fixture is a fresh migrated database and helpers that write the rows a test is about.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	url  string
	pool *pgxpool.Pool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	return &fixture{t: t, ctx: ctx, url: url, pool: pool}
}

func (f *fixture) server(slug string) int64 {
	f.t.Helper()
	return testfactory.Server(f.ctx, f.t, f.pool, &testfactory.ServerOpts{Slug: slug})
}

// finished adds a job requested at `at` that took `took` to finish; reason "" means scheduled.
func (f *fixture) finished(server int64, at time.Time, took time.Duration, reason string) int64 {
	f.t.Helper()
	return testfactory.Job(f.ctx, f.t, f.pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &at,
		FinishedAt: testfactory.Ptr(at.Add(took)), Reason: reason})
}

// open adds a job requested at `at` that never finished.
func (f *fixture) open(server int64, at time.Time, reason string) int64 {
	f.t.Helper()
	return testfactory.Job(f.ctx, f.t, f.pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &at, Reason: reason})
}
