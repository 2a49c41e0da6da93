package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

func TestRunRoundViaQueueQueuesOneJobPerInvocationAndPrintsTheRoundID(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	res := runCLI(t, "--database-url", url, "run", "round", "--via-queue", "--unsigned", "--fanout", "3", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		RoundID     int64 `json:"round_id"`
		Invocations int   `json:"invocations"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, 4, got.Invocations)
	var queued int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*)::int FROM river_job WHERE kind = 'probectl_invocation' AND (args ->> 'round_id')::bigint = $1",
		got.RoundID).Scan(&queued))
	assert.Equal(t, 4, queued, "1 + fan-out invocations wait for the workers")
}

func TestQueueAndWorkerFlagsAreCheckedBeforeConnecting(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"--wait without --via-queue": {"run", "round", "--unsigned", "--wait"},
		"--max-workers 0":            {"worker", "--unsigned", "--max-workers", "0"},
		"--every below 5s":           {"deploy", "record", "--every", "1s"},
		"worker without a key":       {"worker"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, append([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none"}, args...)...)
			assert.Equal(t, 2, res.Code, res.Stderr)
		})
	}
}

func TestMigrateAppliesRiversMigrationsAndStatusListsThem(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyDB(t)
	res := runCLI(t, "--database-url", url, "migrate")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "00008_schedule.sql")
	assert.Contains(t, res.Stdout, "river/")

	res = runCLI(t, "--database-url", url, "migrate", "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var st struct {
		Migrations []struct {
			Name    string `json:"name"`
			Applied bool   `json:"applied"`
		} `json:"migrations"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &st))
	river := 0
	for _, m := range st.Migrations {
		if strings.HasPrefix(m.Name, "river/") {
			river++
			assert.True(t, m.Applied, m.Name)
		}
	}
	assert.Positive(t, river, "River's migrations are listed")
	var exists bool
	require.NoError(t, dbtest.Pool(t, url).QueryRow(context.Background(), "SELECT to_regclass('river_job') IS NOT NULL").Scan(&exists))
	assert.True(t, exists, "river_job is created in the same database")
}

func TestDeployRecordEveryIsStoredAndShownByStatus(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := runCLI(t, "--database-url", url, "deploy", "record", "--actor", "al", "--every", "5m")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = runCLI(t, "--database-url", url, "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var st struct {
		ActiveRelease struct {
			RoundEverySeconds float64 `json:"round_every_seconds"`
		} `json:"active_release"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &st), res.Stdout)
	assert.Equal(t, 300.0, st.ActiveRelease.RoundEverySeconds)
	res = runCLI(t, "--database-url", url, "status")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "probectl worker starts a round every 5m")
}

func TestWorkerRefusesAKeyThatIsNotRegistered(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	key := filepath.Join(t.TempDir(), "probe.key")
	require.Equal(t, 0, runCLI(t, "--database-url", url, "keys", "generate", "--out", key).Code)
	_, err := pool.Exec(context.Background(), "DELETE FROM signing_keys")
	require.NoError(t, err)
	res := runCLI(t, "--database-url", url, "worker", "--signing-key", key)
	assert.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "is not registered")
}

// An operator reading the worker's help learns that it is what delivers the alerts.
func TestWorkerHelpSaysItDeliversTheAlerts(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "worker", "--help")
	require.Equal(t, 0, res.Code, res.Stderr)
	for _, want := range []string{"It also delivers the alerts (docs/alerts.md)", "probectl_alerts", "24 h",
		"round.dead", "'probectl receivers'"} {
		require.Contains(t, res.Stdout, want)
	}
}
