package release_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var tmpl = dbtest.NewTemplate("release_tmpl", testfactory.Migrate)

// parallel is the incident's first parallel release: 19 fan-out messages, 5 claims, 3 at a time.
var parallel = release.Settings{Fanout: 19, ClaimLimit: 5, Concurrency: 3, MinSpacing: settings.Duration(10 * time.Minute),
	RequestTimeout: settings.Duration(10 * time.Second), MaxDuration: settings.Duration(4 * time.Minute), Finish: release.FinishTx}

// sequential is the release before it: one loop.
var sequential = release.Settings{Fanout: 0, ClaimLimit: 25, Concurrency: 1, MinSpacing: settings.Duration(10 * time.Minute),
	RequestTimeout: settings.Duration(10 * time.Second), MaxDuration: settings.Duration(4 * time.Minute), Finish: release.FinishTx}

// record records a release and fails the test on error.
func record(t *testing.T, pool *pgxpool.Pool, version string, s release.Settings, ways ...release.Way) release.Release {
	t.Helper()
	rec, err := release.Record(t.Context(), pool, release.RecordRequest{
		Version: version, Settings: s, WaysBack: ways, Actor: "ana", Note: "deploy " + version})
	require.NoError(t, err)
	return rec.Release
}

// plantData writes a few rows in every data table, so that a test can show they are left alone.
func plantData(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	for range 3 {
		srv := testfactory.Server(ctx, t, pool, nil)
		round := testfactory.Round(ctx, t, pool, nil)
		done := time.Now()
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round, FinishedAt: &done})
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: srv, Envelope: []byte(`{"payload":"x"}`)})
	}
	open := testfactory.Server(ctx, t, pool, nil)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: open})
}

// dataTables are the tables a rollback must never write.
var dataTables = []string{"servers", "probe_rounds", "probe_jobs", "probe_runs", "signing_keys"}

// fingerprint is every data table's content, row for row, as one string per table. Each row's
// xmin is part of it: an UPDATE that writes the same values still makes a new row version (and
// takes row locks that claims and finishes would wait on), and must show.
func fingerprint(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range dataTables {
		var sum string
		order := "id"
		if table == "signing_keys" {
			order = "key_id"
		}
		// Test-only: table names cannot be query parameters, and these are constants above.
		err := pool.QueryRow(t.Context(), "SELECT count(*) || ':' || coalesce(md5(string_agg(t::text || '@' || t.xmin::text, ',' ORDER BY "+order+")), '') FROM "+table+" t").Scan(&sum)
		require.NoError(t, err)
		out[table] = sum
	}
	return out
}

// active is the active release of h; the test fails when there is none.
func active(t *testing.T, h *release.History) *release.Release {
	t.Helper()
	for i := range h.Releases {
		if h.Releases[i].Active {
			return &h.Releases[i]
		}
	}
	t.Fatal("no release is active")
	return nil
}
