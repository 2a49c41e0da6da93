package audit_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/testfactory"
)

// toolRun stores a run at `at` whose result lists tools {name: fingerprint}, as the checker writes
// it; extra fields (tools_truncated, auth) are merged in.
func (f *fixture) toolRun(server int64, at time.Time, version string, tools map[string]string, extra map[string]any) int64 {
	f.t.Helper()
	prints := []map[string]string{}
	for name, fp := range tools {
		prints = append(prints, map[string]string{"name": name, "fingerprint": fp})
	}
	res := map[string]any{"outcome": "ok", "server_version": version, "tools_fingerprint": fmt.Sprint(tools),
		"tool_fingerprints": prints}
	for k, v := range extra {
		res[k] = v
		if v == nil {
			delete(res, k) // a run behind auth has no list at all
		}
	}
	raw, err := json.Marshal(res)
	require.NoError(f.t, err)
	job := f.finished(server, at, time.Second, "")
	return testfactory.Run(f.ctx, f.t, f.pool, &testfactory.RunOpts{JobID: job, ServerID: server,
		FinishedAt: testfactory.Ptr(at.Add(time.Second)), Result: raw})
}

func TestToolsComparesOnlyCompleteListsAndTakesTheBaselineFromBeforeTheWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	since := t0
	s := f.server("s")
	base := f.toolRun(s, since.Add(-time.Hour), "1", map[string]string{"a": "fa"}, nil) // before --since: the baseline
	f.toolRun(s, since.Add(time.Minute), "1", map[string]string{"a": "fa", "b": "fb"}, map[string]any{"tools_truncated": true})
	f.toolRun(s, since.Add(2*time.Minute), "1", map[string]string{"a": "fa2"}, map[string]any{"auth": "required", "tools_fingerprint": nil})
	changed := f.toolRun(s, since.Add(3*time.Minute), "1", map[string]string{"a": "fa2", "c": "fc"}, nil)
	f.toolRun(s, since.Add(4*time.Minute), "1", map[string]string{"a": "fa2", "c": "fc"}, nil) // the same again

	fresh := f.server("fresh") // one run only: a baseline, not a change
	f.toolRun(fresh, since.Add(time.Minute), "1", map[string]string{"a": "fa"}, nil)

	r, err := audit.Tools(f.ctx, f.pool, audit.ToolsParams{Since: since, Until: since.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(2), r.Servers)
	require.Equal(t, int64(3), r.Runs, "the truncated run and the one behind auth are not compared")
	require.Len(t, r.Changes, 1)
	c := r.Changes[0]
	require.Equal(t, "s", c.Server)
	require.Equal(t, base, c.FromRun)
	require.Equal(t, changed, c.ToRun)
	require.Equal(t, []string{"c"}, c.Added)
	require.Empty(t, c.Removed)
	require.Len(t, c.Changed, 1)
	require.Equal(t, "a", c.Changed[0].Name)
	require.Equal(t, []string{"unknown"}, c.Changed[0].Fields, "no stored definitions to compare")
	require.Equal(t, audit.FlagChangedWithoutVersionBump, c.Flag)

	only, err := audit.Tools(f.ctx, f.pool, audit.ToolsParams{Since: since, Until: since.Add(time.Hour), Server: "fresh"})
	require.NoError(t, err)
	require.Equal(t, int64(1), only.Servers)
	require.Empty(t, only.Changes)

	js, err := json.Marshal(r)
	require.NoError(t, err)
	var shape map[string]any
	require.NoError(t, json.Unmarshal(js, &shape))
	require.ElementsMatch(t, []string{"population", "flagged", "changes"}, keys(shape))
	change := shape["changes"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"server", "from_run", "to_run", "at", "added", "removed", "changed",
		"version_before", "version_after", "flag"}, keys(change))
}

func TestToolsRefusesAMissingSince(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := audit.Tools(f.ctx, f.pool, audit.ToolsParams{})
	var pe *audit.ParamError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "since", pe.Param)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
