package probe

import (
	"context"
	"io"
	"log/slog"
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
		testKnobs: testKnobs{heartbeatEvery: 20 * time.Millisecond}}
	stop := r.beat(ctx, roundID)
	defer stop()

	deadline := time.Now().Add(10 * time.Second)
	for beats := false; !beats; {
		require.True(t, time.Now().Before(deadline), "no heartbeat in 10 s while the round's pool was held")
		time.Sleep(10 * time.Millisecond) // polling a condition, not standing in for one
		require.NoError(t, held.QueryRow(ctx, "SELECT heartbeat_at > $2 FROM probe_rounds WHERE id = $1", roundID,
			began.Add(time.Minute)).Scan(&beats))
	}
}
