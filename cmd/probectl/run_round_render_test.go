package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

func TestARoundSummaryWithMoreJobsThanServersSaysAServerWasClaimedTwice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		jobs, servers int
		want          bool
	}{
		{"one job per server", 2, 2, false},
		{"two jobs on one of two servers", 3, 2, true},
	} {
		io, _, out, _ := testStreams()
		f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
		sum := &probe.Summary{RoundID: 7, Settings: settings.Default(),
			RoundCounts: queries.RoundCounts{Jobs: tc.jobs, Runs: tc.jobs, Servers: tc.servers}}
		require.NoError(t, renderRoundSummary(f, "table", sum, nil, nil, nil), tc.name)
		line := "3 jobs covered 2 servers: a server was claimed twice\n"
		if tc.want {
			assert.Contains(t, out.String(), line, tc.name)
		} else {
			assert.NotContains(t, out.String(), "claimed twice", tc.name)
		}
	}
}

// A round that could not count what it left (the database did not answer at its end) says its
// counts are unknown: it used to print 0 jobs, which `runs recover` and status then contradicted.
func TestARoundSummaryWhoseCountsAreUnknownDoesNotSayZero(t *testing.T) {
	t.Parallel()
	io, _, out, _ := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	sum := &probe.Summary{RoundID: 7, Invocations: 1, Settings: settings.Default(), CountsUnknown: true}
	require.NoError(t, renderRoundSummary(f, "table", sum, nil, nil, nil))
	assert.Regexp(t, `(?m)^7 +1 +\? +\? +\? +\? +\? +\? +\? `, out.String())
	assert.Contains(t, out.String(), "its counts are unknown, not zero")

	io, _, out, _ = testStreams()
	f = newFactory(io, testEnv(t), buildInfo{Version: "test"})
	require.NoError(t, renderRoundSummary(f, "json", sum, nil, nil, nil))
	assert.Contains(t, out.String(), `"counts_unknown": true`)
}

// A round without batches (advance-first) says its failed batches' causes as {}, not null: the
// documented shape is an object.
func TestARoundWithoutBatchesSaysNoCausesAsAnEmptyObject(t *testing.T) {
	b, err := json.Marshal(roundJSON{FinishBatchCauses: causesOrNone(nil)})
	require.NoError(t, err)
	require.Contains(t, string(b), `"finish_batch_causes":{}`)
}
