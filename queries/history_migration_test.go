package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// historyVersion is the migration that adds the history views and the rollup.
const historyVersion = 7

// The rollup is filled from the runs stored before migration 00007 and kept by its trigger from
// then on, by any writer (the previous binary's finish included): both must agree with run_facts.
func TestTheRollupIsBackfilledByTheMigrationAndKeptByTheTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t))
	p, err := queries.Provider(pool)
	require.NoError(t, err)
	var before int64
	for _, s := range p.ListSources() {
		if s.Version < historyVersion {
			before = max(before, s.Version)
		}
	}
	_, err = p.UpTo(ctx, before)
	require.NoError(t, err)

	day := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	server := func(slug, kind string) int64 {
		return testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug, URL: "https://" + slug + ".example/",
			Kind: kind, NextCheckAt: &day})
	}
	run := func(server int64, at time.Time, took time.Duration, jobOutcome, result string) {
		fin := at.Add(took)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &at, FinishedAt: &fin,
			Outcome: jobOutcome})
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &at, FinishedAt: &fin,
			Result: []byte(result)})
	}
	a, b := server("alpha", "http"), server("bravo", "mcp")
	run(a, day.Add(-48*time.Hour), 100*time.Millisecond, "ok", `{"outcome":"ok"}`)
	run(a, day.Add(-24*time.Hour), 3*time.Second, "failed", `{"outcome":"failed","error":"HTTP 500"}`)
	// Stored late, after its job was closed as abandoned: counted in the totals, not in uptime.
	run(a, day.Add(-23*time.Hour), 200*time.Millisecond, "abandoned", `{"outcome":"ok"}`)
	run(b, day.Add(-time.Hour), 400*time.Millisecond, "ok",
		`{"outcome":"ok","requests":[{"tls":{"cert_not_after":"2027-01-01T00:00:00Z"}}]}`)

	_, err = p.UpTo(ctx, historyVersion)
	require.NoError(t, err)

	type rollup struct {
		LastOutcome  string     `db:"last_outcome"`
		FailingSince *time.Time `db:"failing_since"`
		Uptime       *float64   `db:"uptime_30d"`
		CertNotAfter *time.Time `db:"cert_not_after"`
	}
	read := func(id int64) rollup {
		r, err := optionalRowSQL[rollup](ctx, pool, `SELECT last_outcome, failing_since, uptime_30d, cert_not_after FROM server_rollups WHERE server_id = $1`, id)
		require.NoError(t, err)
		require.NotNil(t, r)
		return *r
	}
	ra := read(a)
	assert.Equal(t, "failed", ra.LastOutcome, "the late run is left out")
	assert.Equal(t, day.Add(-24*time.Hour), ra.FailingSince.UTC())
	assert.InDelta(t, 0.5, *ra.Uptime, 1e-9)
	rb := read(b)
	assert.Equal(t, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), rb.CertNotAfter.UTC())

	totals, err := queries.RunTotals(ctx, pool)
	require.NoError(t, err)
	byKey := map[string]queries.RunTotal{}
	for _, tt := range totals {
		byKey[tt.Kind+"/"+tt.Outcome] = tt
	}
	assert.Equal(t, int64(2), byKey["http/ok"].Runs, "every run counts in the totals, the late one too")
	assert.Equal(t, []int64{1, 2, 2, 2, 2, 2, 2, 2, 2}, byKey["http/ok"].Buckets)
	assert.Equal(t, int64(1), byKey["http/failed"].Runs)
	assert.Equal(t, []int64{0, 0, 0, 0, 0, 1, 1, 1, 1}, byKey["http/failed"].Buckets)

	// From now on the trigger keeps it: an ok run ends the failure...
	run(a, day, 50*time.Millisecond, "ok", `{"outcome":"ok"}`)
	ra = read(a)
	assert.Equal(t, "ok", ra.LastOutcome)
	assert.Nil(t, ra.FailingSince)
	assert.InDelta(t, 2.0/3, *ra.Uptime, 1e-9)
	// ...a failure starts one...
	run(a, day.Add(time.Hour), 50*time.Millisecond, "error", `{"outcome":"error"}`)
	run(a, day.Add(2*time.Hour), 50*time.Millisecond, "failed", `{"outcome":"failed"}`)
	ra = read(a)
	assert.Equal(t, day.Add(time.Hour), ra.FailingSince.UTC(), "since the first run of the streak")
	// ...and a run replayed late from a spool counts in its day without replacing the newer one.
	run(a, day.Add(-72*time.Hour), 50*time.Millisecond, "ok", `{"outcome":"ok"}`)
	ra = read(a)
	assert.Equal(t, "failed", ra.LastOutcome)
	assert.InDelta(t, 3.0/6, *ra.Uptime, 1e-9)
	// A late run (its job closed as abandoned first) and one interrupted by probectl say nothing
	// about the server.
	run(a, day.Add(3*time.Hour), 50*time.Millisecond, "abandoned", `{"outcome":"ok"}`)
	run(a, day.Add(4*time.Hour), 50*time.Millisecond, "error", `{"outcome":"error","summary":"interrupted"}`)
	ra = read(a)
	assert.Equal(t, "failed", ra.LastOutcome)
	assert.InDelta(t, 3.0/6, *ra.Uptime, 1e-9)
}

// optionalRowSQL reads one row of a query written in a test, by name.
func optionalRowSQL[T any](ctx context.Context, db queries.DBTX, sql string, args ...any) (*T, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	return &v, err
}
