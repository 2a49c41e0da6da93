package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
