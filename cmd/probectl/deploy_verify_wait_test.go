package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeployVerifyWaitSaysWhatItWaitsForAndUntilWhen(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := withDB(url).run(t, "deploy", "record", "--ways-back", "fanout-off")
	require.Equal(t, 0, res.Code, res.Stderr)

	// No round ever comes: the wait runs out (a second), and the report is inconclusive.
	res = withDB(url).run(t, "deploy", "verify", "--rounds", "2", "--wait", "1s")
	require.Equal(t, 1, res.Code, res.Stderr)
	want := regexp.MustCompile(`(?m)^waiting until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((0s|1s) left\) for the first 2 round\(s\) after release #1 to finish: 0 started, 0 finished$`)
	assert.Regexp(t, want, res.Stderr)
	assert.Len(t, want.FindAllString(res.Stderr, -1), 1, "in a log, said once")
	assert.NotContains(t, res.Stdout, "waiting", "stdout is for the report")

	res = withDB(url).run(t, "deploy", "verify", "--rounds", "2", "--wait", "1s", "--quiet")
	require.Equal(t, 1, res.Code, res.Stderr)
	assert.NotContains(t, res.Stderr, "waiting")
}
