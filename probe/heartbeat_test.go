package probe

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// A round's heartbeat does not wait for its pool: while the round's work holds every connection
// of it (its pool is small, RoundConns), the round still beats, through a connection of its own.
func TestTheHeartbeatBeatsWhileTheRoundsWorkHoldsEveryConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	db := dbtest.Pool(t, url, dbtest.MaxConns(1))
	// A round starts with its first heartbeat: this one an hour ago, so that a beat shows.
	began := time.Now().Add(-time.Hour)
	roundID, _, err := queries.InsertRound(ctx, db, settings.RecordOf(testSettings(FinishTx), ""), &began)
	require.NoError(t, err)

	held, err := db.Acquire(ctx) // the round's work, holding the pool's one connection
	require.NoError(t, err)
	defer held.Release()
	r := &Round{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		testKnobs: testKnobs{heartbeatEvery: 100 * time.Millisecond}}
	stop := r.beat(ctx, roundID)
	defer stop()

	waitForABeat(t, held, roundID, began, "while the round's pool was held")
}

// When the heartbeat's own connection cannot be had (max_connections reached, a role's
// connection limit, a pooler's cap) while the round's pool still works, the round beats through
// its pool: it must not be taken for dead for want of a connection it does not need.
func TestTheHeartbeatBeatsThroughTheRoundsPoolWhenItsOwnCannotConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	// The round's pool makes its one connection; every later dial, the heartbeat's own, is refused.
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			return nil, errors.New("refused: no second connection")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	db := dbtest.Pool(t, url, dbtest.MaxConns(1), dbtest.Dialer(dial))
	began := time.Now().Add(-time.Hour)
	roundID, _, err := queries.InsertRound(ctx, db, settings.RecordOf(testSettings(FinishTx), ""), &began)
	require.NoError(t, err)

	r := &Round{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		testKnobs: testKnobs{heartbeatEvery: 100 * time.Millisecond}}
	stop := r.beat(ctx, roundID)
	defer stop()
	waitForABeat(t, db, roundID, began, "when its own connection could not be had")
	require.Greater(t, dials.Load(), int32(1), "the heartbeat tried a connection of its own")
}

// waitForABeat waits until the round has beaten since began (its first heartbeat, an hour ago).
func waitForABeat(t *testing.T, db queries.DBTX, roundID int64, began time.Time, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for beats := false; !beats; {
		require.True(t, time.Now().Before(deadline), "no heartbeat in 10 s %s", when)
		time.Sleep(10 * time.Millisecond) // polling a condition, not standing in for one
		require.NoError(t, db.QueryRow(context.Background(), "SELECT heartbeat_at > $2 FROM probe_rounds WHERE id = $1",
			roundID, began.Add(time.Minute)).Scan(&beats))
	}
}

// A round beats until it has ended, not only while it checks: the replay of the failover
// journals and the round's end come after its checks, each with a budget of 30 s, and a round
// silent for 60 s is taken for dead (a false round.dead alert). Here the round's end waits, its
// heartbeat made an hour old, until a beat comes.
func TestARoundBeatsUntilItHasEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	dueServers(t, db, 1)
	beatAtTheEnd := false
	r := &Round{DB: db, Settings: testSettings(FinishTx), Checker: &okChecker{}, SpoolDir: filepath.Join(t.TempDir(), "spool"),
		testKnobs: testKnobs{heartbeatEvery: 50 * time.Millisecond, hooks: hooks{beforeWrite: func(ctx context.Context, w write) {
			if w != writeFinishRound || beatAtTheEnd {
				return
			}
			var roundID int64
			began := time.Now().Add(-time.Hour)
			require.NoError(t, db.QueryRow(ctx, `UPDATE probe_rounds SET heartbeat_at = $1 WHERE finished_at IS NULL
			                                     RETURNING id`, began).Scan(&roundID))
			waitForABeat(t, db, roundID, began, "while the round ends")
			beatAtTheEnd = true
		}}}}
	_, err := r.Run(ctx)
	require.NoError(t, err)
	require.True(t, beatAtTheEnd)
}

// A round beats from its start: before it claims, it replays the failover journals (after a
// failover, every result the new primary lacks, each with a finish's budget), and a round silent
// for 60 s is taken for dead. Here the replay waits, on a table it writes, while the round's
// heartbeat, made an hour old, must come.
func TestARoundBeatsWhileItsStartReplaysTheJournals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	dueServers(t, db, 1)
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // released below; a second rollback does nothing
	// The replay's first write (the timeline it sees) waits.
	_, err = tx.Exec(ctx, "LOCK TABLE probectl_timelines IN EXCLUSIVE MODE")
	require.NoError(t, err)

	r := &Round{DB: db, Settings: testSettings(FinishTx), Checker: &okChecker{}, SpoolDir: filepath.Join(t.TempDir(), "spool"),
		testKnobs: testKnobs{heartbeatEvery: 50 * time.Millisecond}}
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx)
		done <- err
	}()
	var roundID int64
	deadline := time.Now().Add(10 * time.Second)
	for roundID == 0 {
		require.True(t, time.Now().Before(deadline), "no round started in 10 s")
		time.Sleep(10 * time.Millisecond) // polling a condition, not standing in for one
		require.NoError(t, db.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM probe_rounds WHERE finished_at IS NULL").Scan(&roundID))
	}
	began := time.Now().Add(-time.Hour)
	_, err = db.Exec(ctx, "UPDATE probe_rounds SET heartbeat_at = $2 WHERE id = $1", roundID, began)
	require.NoError(t, err)
	waitForABeat(t, db, roundID, began, "while the round's start replays the journals")
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-done)
}
