package probe

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/pglaunch"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// ownCluster starts a PostgreSQL of the test's own, migrated, with n due servers: these tests
// stop and restart it, which the shared test cluster must never see.
func ownCluster(t *testing.T, n int) (*pglaunch.Cluster, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	cl, err := pglaunch.Start(ctx, pglaunch.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Stop() })
	url := cl.URL("postgres")
	require.NoError(t, testfactory.Migrate(ctx, url))
	db := dbtest.Pool(t, url, dbtest.MaxConns(8))
	for range n {
		testfactory.Server(ctx, t, db, nil)
	}
	return cl, db
}

// parkedRound runs a round of n jobs (two invocations) whose checks all wait, once claimed, until
// the test has done to the database what it is about; then the checks end and the round
// finishes them. It returns the round's summary and error.
func parkedRound(t *testing.T, r *Round, n int, meanwhile func()) (*Summary, error) {
	t.Helper()
	started, gate := make(chan struct{}, n), make(chan struct{})
	r.Checker = &okChecker{during: func(context.Context, check.Target) { started <- struct{}{}; <-gate }}
	r.Settings.Fanout, r.Settings.ClaimLimit, r.Settings.Concurrency = 1, n/2, n/2
	type out struct {
		sum *Summary
		err error
	}
	done := make(chan out, 1)
	go func() {
		sum, err := r.Run(context.Background())
		done <- out{sum, err}
	}()
	for range n {
		select {
		case <-started:
		case o := <-done:
			t.Fatalf("the round ended before all %d checks began: %v", n, o.err)
		}
	}
	meanwhile()
	close(gate)
	o := <-done
	require.NotNil(t, o.sum, "round failed before it started: %v", o.err)
	return o.sum, o.err
}

// lostResults counts the jobs of a round that have no run: checks that were made and not stored.
func lostResults(t *testing.T, db queries.DBTX, roundID int64) int {
	t.Helper()
	jobs, err := queries.ListRoundJobs(context.Background(), db, roundID)
	require.NoError(t, err)
	lost := 0
	for _, j := range jobs {
		if j.RunID == nil {
			lost++
		}
	}
	return lost
}

// A restart of PostgreSQL while a round's checks run (pg_ctl restart -m fast: every session is
// cut) costs no result: each finish tries again, on a fresh connection, inside its budget.
func TestRestartOfPostgresMidRoundLosesNoResult(t *testing.T) {
	const n = 12
	cl, db := ownCluster(t, n)
	r := &Round{DB: db, Settings: testSettings(FinishTx), SpoolDir: filepath.Join(t.TempDir(), "spool")}
	sum, err := parkedRound(t, r, n, func() {
		require.NoError(t, cl.Shutdown())
		require.NoError(t, cl.Resume(context.Background()))
	})
	require.Equal(t, n, sum.Jobs, "every due server was claimed")
	lost := lostResults(t, db, sum.RoundID)
	t.Logf("results lost across a restart of PostgreSQL: %d of %d", lost, n)
	require.Zero(t, lost)
	require.NoError(t, err)
	require.Equal(t, n, sum.Runs)
	require.Zero(t, sum.Spooled)
	require.False(t, sum.FinishedAt.IsZero())
}

// An outage longer than the finish's budget: every result goes to the spool (fsync'd, 0600 in a
// 0700 directory), and one more round stores them all, exactly once, before it claims. A second
// replay of the same results writes nothing.
func TestOutageLongerThanTheBudgetSpoolsAndTheNextRoundStores(t *testing.T) {
	const n = 12
	cl, db := ownCluster(t, n)
	dir := filepath.Join(t.TempDir(), "spool")
	r := &Round{DB: db, Settings: testSettings(FinishTx), SpoolDir: dir, testKnobs: testKnobs{finishBudget: 1500 * time.Millisecond}}
	sum, err := parkedRound(t, r, n, func() { require.NoError(t, cl.Shutdown()) })
	require.Error(t, err)
	require.Equal(t, n, sum.Spooled, "problems: %v", sum.Problems)
	require.NotEmpty(t, sum.SpoolFile)

	fi, err := os.Stat(sum.SpoolFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	saved, err := os.ReadFile(sum.SpoolFile)
	require.NoError(t, err)
	contents, err := InspectSpool(dir)
	require.NoError(t, err)
	require.Equal(t, SpoolContents{Dir: dir, Files: 1, Results: n}, contents)

	require.NoError(t, cl.Resume(context.Background()))
	next := &Round{DB: db, Settings: testSettings(FinishTx), Checker: &okChecker{}, SpoolDir: dir}
	sum2, err := next.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, n, sum2.Recovered.Stored)
	jobs, err := queries.ListRoundJobs(context.Background(), db, sum.RoundID)
	require.NoError(t, err)
	require.Len(t, jobs, n, "every due server was claimed")
	lost := lostResults(t, db, sum.RoundID)
	t.Logf("results lost across an outage longer than the finish's budget, after one more round: %d of %d", lost, n)
	require.Zero(t, lost)
	contents, err = InspectSpool(dir)
	require.NoError(t, err)
	require.Zero(t, contents.Files, "a replayed file is removed")

	// The same results replayed again (a copy restored from a backup, a replay that died before
	// it removed its file): each run exists, so nothing is written and nothing fails.
	require.NoError(t, os.WriteFile(sum.SpoolFile, saved, 0o600))
	rec, err := Recover(context.Background(), db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, Recovery{Dir: dir, Files: 1, AlreadyStored: n}, rec)
	require.Zero(t, lostResults(t, db, sum.RoundID))
}
