package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/pgha"
	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/release"
)

// nowhere is a database URL no server answers: the commands that only read must not need it when
// --read-database-url names a standby.
const nowhere = "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"

// standbyWithReader starts a primary and a streaming standby, seeds the status scenario and a
// SELECT-only role on the primary, waits until the standby has replayed it all, and returns the
// standby's URL as that role, and a pool on the primary.
func standbyWithReader(t *testing.T) (readerURL string, primary *pgxpool.Pool, pair *pgha.Pair) {
	t.Helper()
	ctx := context.Background()
	pair, err := pgha.Start(ctx, pgha.Options{Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pair.Stop() })
	require.NoError(t, testfactory.Migrate(ctx, pair.Primary.URL("postgres")))
	primary = dbtest.Pool(t, pair.Primary.URL("postgres"))
	statustest.Seed(ctx, t, primary)
	statustest.SeedWorkers(ctx, t, primary)
	_, err = primary.Exec(ctx, `CREATE ROLE reader LOGIN; GRANT pg_read_all_data TO reader`)
	require.NoError(t, err)
	waitForReplay(t, pair, primary)
	return fmt.Sprintf("postgres://reader@127.0.0.1:%d/postgres?sslmode=disable", pair.StandbyPort()), primary, pair
}

// waitForReplay returns once the standby has replayed all the primary has written.
func waitForReplay(t *testing.T, pair *pgha.Pair, primary *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var lsn string
	require.NoError(t, primary.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn))
	standby := dbtest.Pool(t, pair.StandbyURL("postgres"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		var caughtUp bool
		require.NoError(t, standby.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&caughtUp))
		if caughtUp {
			break
		}
		require.True(t, time.Now().Before(deadline), "the standby did not replay the seed")
		time.Sleep(20 * time.Millisecond)
	}
}

// The commands that only read run on a hot standby as a role that may only SELECT, with the
// primary's URL pointing nowhere: they write nothing, take no advisory lock and read no UNLOGGED
// table (river_leader is one). status and serve say they read a standby, and its lag.
func TestTheReadOnlyCommandsWorkOnAStandbyWithASelectOnlyRole(t *testing.T) {
	readerURL, primary, _ := standbyWithReader(t)
	ctx := context.Background()
	var runID int64
	require.NoError(t, primary.QueryRow(ctx, `SELECT min(id) FROM probe_runs`).Scan(&runID))
	c := cli{env: map[string]string{"PROBECTL_READ_DATABASE_URL": readerURL}}

	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"status"}, 0, "read on a hot standby"},
		{[]string{"status", "-o", "json"}, 0, `"standby": {`},
		{[]string{"audit", "duplicates", "--since", "24h"}, 0, ""},
		{[]string{"audit", "open"}, 0, ""},
		{[]string{"audit", "rate", "--since", "24h"}, 0, ""},
		{[]string{"audit", "tools"}, 0, ""},
		{[]string{"runs", "list"}, 0, ""},
		{[]string{"runs", "show", strconv.FormatInt(runID, 10)}, 0, ""},
		{[]string{"servers", "list"}, 0, statustest.Stale},
		{[]string{"servers", "show", statustest.Stale}, 0, statustest.Stale},
		{[]string{"deploy", "verify"}, 0, ""},
	}
	for _, tc := range cases {
		res := c.run(t, append([]string{"--database-url", nowhere}, tc.args...)...)
		name := strings.Join(tc.args, " ")
		require.NotEqual(t, 3, res.Code, "%s could not work on the standby: %s", name, res.Stderr)
		require.NotContains(t, res.Stderr, "read-only transaction", name)
		require.NotContains(t, res.Stderr, "permission denied", name)
		require.Contains(t, res.Stdout, tc.out, name)
		t.Logf("%s: exit %d", name, res.Code)
	}
	// The flag does the same as the variable.
	res := runCLI(t, "--database-url", nowhere, "--read-database-url", readerURL, "status")
	require.Equal(t, 0, res.Code, res.Stderr)

	streams, _, _, _ := testStreams()
	f := newFactory(streams, func(string) string { return "" }, buildInfo{Version: "test"})
	t.Cleanup(f.Close)
	f.DatabaseURL, f.ReadDatabaseURL = nowhere, readerURL
	addrs := make(chan net.Addr, 1)
	opts := &serveOptions{f: f, Addr: "127.0.0.1:0", ReadTimeout: 10 * time.Second, ready: func(a net.Addr) { addrs <- a }}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- runServe(sctx, opts) }()
	base := "http://" + (<-addrs).String()
	for path, want := range map[string]string{
		"/status":      "Read on a hot standby",
		"/zh/status":   "读自热备库",
		"/status.json": `"replay_lag_seconds"`,
		"/metrics":     "probectl_standby_replay_lag_seconds ",
	} {
		res, err := http.Get(base + path)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", path, body)
		require.Contains(t, string(body), want, path)
	}
	cancel()
	require.NoError(t, <-served)
}

// A standby that lags does not make a live round look dead: deploy verify (and its --wait) and
// status judge a round's heartbeat as of the data the standby has replayed, not by its clock.
// Here the standby's replay is paused right after a round's heartbeat 58 s old, and the
// heartbeat is 61 s old by the clock when verify reads it; by the data it is 58 s old, alive.
func TestDeployVerifyOnALaggingStandbyDoesNotJudgeALiveRoundDead(t *testing.T) {
	readerURL, primary, pair := standbyWithReader(t)
	ctx := context.Background()
	rel := recordAt(t, primary, time.Now().Add(-10*time.Minute), "dev", parallelSettings, release.WayPrevious)
	var dbNow time.Time
	require.NoError(t, primary.QueryRow(ctx, `SELECT now()`).Scan(&dbNow))
	testfactory.Round(ctx, t, primary, &testfactory.RoundOpts{ReleaseID: &rel.ID, Version: "dev",
		StartedAt: testfactory.Ptr(dbNow.Add(-2 * time.Minute)), HeartbeatAt: testfactory.Ptr(dbNow.Add(-58 * time.Second))})
	waitForReplay(t, pair, primary)
	standby := dbtest.Pool(t, pair.StandbyURL("postgres"))
	_, err := standby.Exec(ctx, `SELECT pg_wal_replay_pause()`)
	require.NoError(t, err)
	testfactory.Server(ctx, t, primary, nil) // received by the standby, not replayed: it lags
	deadline := time.Now().Add(30 * time.Second)
	for {
		var behind bool
		require.NoError(t, standby.QueryRow(ctx, `SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()`).Scan(&behind))
		if behind {
			break
		}
		require.True(t, time.Now().Before(deadline), "the standby did not receive the write")
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Until(dbNow.Add(3 * time.Second))) // the time that passes is what is tested

	c := cli{env: map[string]string{"PROBECTL_READ_DATABASE_URL": readerURL}}
	res := c.run(t, "--database-url", nowhere, "deploy", "verify", "-o", "json")
	require.NotEqual(t, 3, res.Code, res.Stderr)
	var rep struct {
		Rounds []struct {
			State string `json:"state"`
		} `json:"rounds"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rep), res.Stdout)
	require.Len(t, rep.Rounds, 1)
	require.Equal(t, "running", rep.Rounds[0].State, "a lagging standby judged a live round dead")

	// --wait waits for the live round (and gives up after its timeout), rather than taking it
	// for dead and finished.
	res = c.run(t, "--database-url", nowhere, "deploy", "verify", "--wait", "2s", "-o", "json")
	require.NotEqual(t, 3, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rep), res.Stdout)
	require.Equal(t, "running", rep.Rounds[0].State, "deploy verify --wait judged a live round dead on a lagging standby")

	res = c.run(t, "--database-url", nowhere, "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var st struct {
		Standby struct {
			ReplayLagSeconds float64 `json:"replay_lag_seconds"`
		} `json:"standby"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &st))
	require.Greater(t, st.Standby.ReplayLagSeconds, 2.0, "status shows the lag")
}

// A read database that does not answer is named as such: the hint says where its URL came from
// (the flag, or the variable), not --database-url, which may be fine.
func TestAnUnreachableReadDatabaseIsNamedWithItsFlag(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := runCLI(t, "--database-url", url, "--read-database-url", nowhere, "status")
	require.Equal(t, 3, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "could not reach the read database at 127.0.0.1:1")
	require.Contains(t, res.Stderr, "that --read-database-url (the standby the commands that only read use) points at it")
	res = cli{env: map[string]string{"PROBECTL_READ_DATABASE_URL": nowhere}}.run(t, "--database-url", url, "status")
	require.Equal(t, 3, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "that PROBECTL_READ_DATABASE_URL (the standby")
}
