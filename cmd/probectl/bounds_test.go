package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/release"
)

// Every bound, at run round and deploy record alike: out of bounds exits 2 naming the flag and
// the bound, before anything is connected to or written.
func TestEveryRoundSettingOutOfBoundsIsRefusedByRunRoundAndDeployRecord(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a request timeout that wraps 8 × timeout", []string{"--request-timeout", "2305843009213693952ns"},
			"--request-timeout: 640511h56m49.213693952s is out of bounds: must be between 1s and 1m"},
		{"a request timeout over a minute", []string{"--request-timeout", "61s", "--max-duration", "1m"},
			"--request-timeout: 1m1s is out of bounds: must be between 1s and 1m"},
		{"a round budget over 14 minutes", []string{"--max-duration", "15m"}, "--max-duration: 15m0s is out of bounds: must be between 1s and 14m"},
		// PostgreSQL keeps microseconds: 1ns would be stored as 0 (deploy record's database error,
		// exit 3) or run as a timeout no request meets (every check an error, blamed on the servers).
		{"a request timeout of a nanosecond", []string{"--request-timeout", "1ns"},
			"--request-timeout: 1ns is out of bounds: must be between 1s and 1m"},
		{"a request timeout under a second", []string{"--request-timeout", "999ms"},
			"--request-timeout: 999ms is out of bounds: must be between 1s and 1m"},
		{"a round budget of a nanosecond", []string{"--max-duration", "1ns"},
			"--max-duration: 1ns is out of bounds: must be between 1s and 14m"},
		{"no spacing", []string{"--min-spacing", "0"}, "--min-spacing: 0s is out of bounds: must be between 10m"},
		{"a spacing under 10 minutes", []string{"--min-spacing", "9m59s"}, "--min-spacing: 9m59s is out of bounds: must be between 10m"},
		{"a spacing over a week", []string{"--min-spacing", "169h"}, "and 7d"},
		{"a fan-out of a million", []string{"--fanout", "1000000"}, "--fanout: 1000000 is out of bounds: must be at most 1000"},
		{"a claim limit over 10000", []string{"--claim-limit", "10001"}, "--claim-limit: 10001 is out of bounds: must be at most 10000"},
		{"a concurrency over 10000", []string{"--concurrency", "10001"}, "--concurrency: 10001 is out of bounds: must be at most 10000"},
	}
	for _, cmd := range [][]string{{"run", "round", "--unsigned"}, {"deploy", "record"}} {
		for _, tc := range cases {
			t.Run(cmd[0]+" "+cmd[1]+": "+tc.name, func(t *testing.T) {
				t.Parallel()
				// No database is configured: reaching it would exit 3, not 2.
				res := cli{env: map[string]string{"USER": "ana"}}.run(t, append(append([]string{}, cmd...), tc.args...)...)
				require.Equal(t, 2, res.Code, res.Stderr)
				require.Contains(t, res.Stderr, tc.want)
				require.Empty(t, res.Stdout)
			})
		}
	}
}

// A body cap has a bound, at check and run round alike: the field table's, said the same way.
func TestABodyCapOver8MiBIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "http://127.0.0.1:1/mcp", "--max-body", "8388609"},
			"--max-body: 8388609 is out of bounds: must be at most 8388608 (8 MiB)"},
		{[]string{"check", "http://127.0.0.1:1/mcp", "--request-timeout", "61s"},
			"--request-timeout: 1m1s is out of bounds: must be between 1s and 1m"},
		{[]string{"run", "round", "--unsigned", "--max-body", "8388609"},
			"--max-body: 8388609 is out of bounds: must be at most 8388608 (8 MiB)"},
	} {
		res := cli{env: map[string]string{"USER": "ana"}}.run(t, tc.args...)
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, tc.want)
		require.Empty(t, res.Stdout)
	}
}

func TestTheBoundsThemselvesAreAccepted(t *testing.T) {
	t.Parallel()
	res := cli{env: map[string]string{"USER": "ana"}}.run(t, "deploy", "record", "--min-spacing", "10m",
		"--request-timeout", "1m", "--max-duration", "6m", "--fanout", "1000", "--claim-limit", "10000", "--concurrency", "10000")
	require.Equal(t, 3, res.Code, "in bounds, it goes on to the database (none here): %s", res.Stderr)
	res = cli{env: map[string]string{"USER": "ana"}}.run(t, "deploy", "record", "--request-timeout", "1s", "--max-duration", "1s")
	require.Equal(t, 3, res.Code, "the lower bounds are in bounds too: %s", res.Stderr)
}

func TestDeployVerifyWaitsAtMostADay(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "deploy", "verify", "--wait", "24h1m")
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "--wait 24h1m0s: out of bounds: must be at most 24h")
}

// A release recorded with a spacing below the promise (by a previous binary, or by hand) cannot
// switch it off: run round refuses, naming the release, unless a flag within bounds overrides it.
func TestRunRoundRefusesAnActiveReleaseWhoseSpacingIsBelowTheBound(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	s := parallelSettings
	s.MinSpacing = 0
	rel := recordAt(t, pool, time.Now(), "dev", s, release.WayPrevious)
	c := withDB(url)

	for _, args := range [][]string{{"run", "round", "--unsigned"}, {"run", "round", "--unsigned", "--dry-run"}} {
		res := c.run(t, args...)
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "release #1: the active release ships --min-spacing 0s, out of bounds: must be between 10m")
		require.Empty(t, res.Stdout)
	}
	require.Equal(t, int64(1), rel.ID)
	var rounds int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM probe_rounds").Scan(&rounds))
	require.Zero(t, rounds, "nothing was written")

	res := c.run(t, "run", "round", "--unsigned", "--min-spacing", "10m", "--fanout", "0")
	require.Equal(t, 0, res.Code, "a flag within bounds overrides the release: %s", res.Stderr)
}
