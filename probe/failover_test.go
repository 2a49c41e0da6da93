package probe

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/pgha"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// replicated waits until the standby has replayed all the primary has written.
func replicated(t *testing.T, primary *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var lsn string
	require.NoError(t, primary.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn))
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		require.NoError(t, primary.QueryRow(ctx,
			`SELECT coalesce(bool_and(replay_lsn >= $1::pg_lsn), false) FROM pg_stat_replication`, lsn).Scan(&ok))
		if ok {
			return
		}
		require.True(t, time.Now().Before(deadline), "the standby did not replay the primary")
		time.Sleep(10 * time.Millisecond)
	}
}

// After an asynchronous failover the claims the standby never received are gone, and their
// servers look due on the new primary. A round that has room to claim again after the failover
// must not claim them: it would check them a second time. It sees the new timeline before it
// claims and claims no more; at its end its journal stores again what the new primary lacks.
//
// The round (one invocation, 10 checks at a time, room for all 20 servers) starts on a multi-host
// URL; the standby's WAL receiver is held just before its first claim, so the round's row reaches
// the standby and none of its claims do. Servers 0-9 are checked and stored on the old primary;
// 10-19 are in flight when it is killed. After the promotion the round's finishes of 10-19 find
// no claim (spooled), its slots are free, and it could claim 20 due servers.
func TestARoundClaimsNothingOnANewTimelineAndItsJournalRestoresWhatWasLost(t *testing.T) {
	const n, answered = 20, 10
	ctx := context.Background()
	pair, err := pgha.Start(ctx, pgha.Options{Synchronous: false, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Stop() })
	require.NoError(t, testfactory.Migrate(ctx, pair.Primary.URL("postgres")))
	primary := dbtest.Pool(t, pair.Primary.URL("postgres"))
	db := dbtest.Pool(t, pair.MultiHostURL("postgres"), dbtest.MaxConns(8))
	dueServers(t, db, n)

	var (
		drop    func()
		once    sync.Once
		started atomic.Int32
		gate    = make(chan struct{})
		mu      sync.Mutex
		checks  = map[int64]int{}
	)
	checker := &okChecker{during: func(ctx context.Context, tg check.Target) {
		mu.Lock()
		checks[tg.ServerID]++
		mu.Unlock()
		if started.Add(1) > answered {
			<-gate
		}
	}}
	s := testSettings(FinishTx)
	s.Fanout, s.Concurrency, s.ClaimLimit = 0, 10, 40
	dir := filepath.Join(t.TempDir(), "spool")
	r := &Round{DB: db, Settings: s, Checker: checker, SpoolDir: dir, testKnobs: testKnobs{hooks: hooks{beforeWrite: func(ctx context.Context, w write) {
		if w != writeClaim {
			return
		}
		once.Do(func() {
			replicated(t, primary)
			var err error
			drop, err = pair.HoldWALReceiver()
			require.NoError(t, err)
		})
	}}}}
	type out struct {
		sum *Summary
		err error
	}
	done := make(chan out, 1)
	go func() {
		sum, err := r.Run(ctx)
		done <- out{sum, err}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var runs int
		require.NoError(t, primary.QueryRow(ctx, `SELECT count(*) FROM probe_runs`).Scan(&runs))
		if started.Load() >= n && runs >= answered {
			break
		}
		require.True(t, time.Now().Before(deadline), "the round did not get going: %d checks, %d runs", started.Load(), runs)
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, pair.KillPrimary())
	drop()
	require.NoError(t, pair.WaitStandby(ctx))
	require.NoError(t, pair.Promote(ctx))
	db.Reset()
	require.NoError(t, db.Ping(ctx), "the pool reaches the new primary")
	close(gate)
	o := <-done
	require.Error(t, o.err, "results wait in the spool")
	require.NotNil(t, o.sum.Journal, "problems: %v", o.sum.Problems)
	t.Logf("round: %d spooled; journal replay: %+v", o.sum.Spooled, *o.sum.Journal)

	mu.Lock()
	for id, k := range checks {
		require.Equal(t, 1, k, "server %d was checked %d times", id, k)
	}
	require.Len(t, checks, n)
	mu.Unlock()
	require.Equal(t, answered, o.sum.Journal.Restored, "the journal restores the results the failover lost")

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, n-answered, rec.Restored, "problems: %v", rec.Problems)
	var runs int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM probe_runs`).Scan(&runs))
	require.Equal(t, n, runs, "nothing lost in the end")
	due, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: o.sum.RoundID, Limit: n})
	require.NoError(t, err)
	require.Empty(t, due, "every server restored is scheduled on, none is due again")
}
