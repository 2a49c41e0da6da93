package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryDurationFlagReadsDaysAndWeeks(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := withDB(url).run(t, "deploy", "record", "--min-spacing", "1d", "--max-duration", "5m", "--request-timeout", "10s", "--ways-back", "fanout-off")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = withDB(url).run(t, "deploy", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Releases []map[string]any `json:"releases"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Len(t, got.Releases, 1)
	assert.Equal(t, float64(86400), got.Releases[0]["min_spacing_seconds"])

	res = withDB(url).run(t, "audit", "duplicates", "--since", "2w", "--window", "1w", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var dup map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &dup))
	assert.Equal(t, float64(7*86400), dup["window_seconds"])
}

func TestABadDurationNamesItsFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "round", "--min-spacing", "1x"}, `--min-spacing: duration "1x": unknown unit "x"`},
		{[]string{"deploy", "record", "--max-duration", "1.5d"}, `--max-duration: duration "1.5d": days must be a whole number`},
		{[]string{"deploy", "verify", "--wait", "-1m"}, `--wait: duration "-1m" is negative`},
		{[]string{"serve", "--read-timeout", "soon"}, `--read-timeout: duration "soon": invalid duration`},
	} {
		res := runCLI(t, tc.args...)
		assert.Equal(t, 2, res.Code, tc.args)
		assert.Contains(t, res.Stderr, tc.want)
		assert.Empty(t, res.Stdout)
	}
}

func TestDurationFlagsShowTheirDefaultsTheWayTablesDo(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "run", "round", "--help")
	require.Equal(t, 0, res.Code)
	assert.Regexp(t, `--min-spacing duration +.*\(default 10m\)`, res.Stdout)
	res = runCLI(t, "deploy", "verify", "--help")
	assert.Regexp(t, `--window duration +.*\(default 10m\)`, res.Stdout)
}
