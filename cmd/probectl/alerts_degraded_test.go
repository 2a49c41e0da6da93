package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// A degraded round is said wherever the round is shown: its summary, status's recent rounds (table
// and JSON), and its runs (runs list, table and JSON, and runs show), all read from
// alert_degraded_rounds by one query. Here the storm guard's floor is one check, so a round whose
// one server answers 500 is a storm.
func TestADegradedRoundIsSaidInItsSummaryStatusAndRuns(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})).AddServers(t, pool, 1, "broken", testfactory.ServerOpts{})
	require.Equal(t, 0, runCLI(t, "--database-url", url, "alerts", "policy", "set", "--storm-min", "1").Code)

	res := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "degraded: too many checks failed at once (1 of 1 when the storm guard judged it")

	res = runCLI(t, "--database-url", url, "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var st struct {
		Rounds []struct {
			RoundID  int64 `json:"round_id"`
			Degraded bool  `json:"degraded"`
		} `json:"recent_rounds"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &st))
	require.Len(t, st.Rounds, 1)
	require.True(t, st.Rounds[0].Degraded)
	round := strconv.FormatInt(st.Rounds[0].RoundID, 10)

	res = runCLI(t, "--database-url", url, "status")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Regexp(t, `(?m)^`+round+` .* 1, degraded `, res.Stdout)
	require.Contains(t, res.Stdout, "degraded: the storm guard judged the round degraded")

	res = runCLI(t, "--database-url", url, "runs", "list", "--round", round, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var runs []struct {
		ID            int64 `json:"id"`
		RoundDegraded bool  `json:"round_degraded"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &runs))
	require.Len(t, runs, 1)
	require.True(t, runs[0].RoundDegraded)

	res = runCLI(t, "--database-url", url, "runs", "list", "--round", round)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "(degraded round: counted toward no threshold)")

	res = runCLI(t, "--database-url", url, "runs", "show", strconv.FormatInt(runs[0].ID, 10))
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "round #"+round+", degraded)")
	require.Contains(t, res.Stdout, "counted toward no server's down threshold")
}

// The summary's JSON says degraded (and a healthy round's says it is not).
func TestARoundSummaryJSONSaysWhetherTheRoundWasDegraded(t *testing.T) {
	t.Parallel()
	for _, degraded := range []*queries.DegradedRound{nil, {RoundID: 7, Checked: 10, Failed: 8}} {
		io, _, out, _ := testStreams()
		f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
		sum := &probe.Summary{RoundID: 7, Settings: settings.Default()}
		require.NoError(t, renderRoundSummary(f, "json", sum, nil, nil, degraded))
		var got struct {
			Degraded *bool `json:"degraded"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &got))
		require.NotNil(t, got.Degraded)
		require.Equal(t, degraded != nil, *got.Degraded)
	}
}
