package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe"
)

// A round opens at most probe.RoundConns connections for its work, whatever its fan-out, and one
// for its heartbeat if it lasts past its first beat (10 s; this one should not): each connection
// is a backend that plans the claim and the finish for itself. Counted by the database itself
// (pg_stat_database.sessions: every session a client opened in the test's own database), with
// this test's other sessions ended first.
func TestARoundOpensAtMostItsConnections(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 200, "fleet", testfactory.ServerOpts{})
	pool.Close()

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	// This session's own count is flushed now, waiting for its lock if it must, not at some idle
	// moment of its choosing between the two readings.
	_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	require.NoError(t, err)
	before := sessionsAlone(t, conn)

	// 20 invocations that all claim at once, 10 servers each.
	res := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
		"--fanout", "19", "--claim-limit", "10", "--concurrency", "10", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)

	opened := sessionsAlone(t, conn) - before
	require.Positive(t, opened)
	require.LessOrEqual(t, opened, int64(probe.RoundConns+1), "the round's sessions: its pool's, and its heartbeat's own")
}

// sessionsAlone waits until conn is the only client of its database, so that every other session
// has ended and reported itself, then returns how many sessions clients have opened there.
func sessionsAlone(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var others int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others))
		if others == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d other sessions still open after 30 s", others)
		time.Sleep(10 * time.Millisecond) // polling a condition, not standing in for one
	}
	var n int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&n))
	return n
}
