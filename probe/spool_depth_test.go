package probe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The spool's depth, which the worker's heartbeat reads every 10 s, is counted without decoding
// a single result: the count is the results a replay would read (complete lines, empty ones and a
// line a crash cut short left out), and the allocations do not grow with the results. Decoding
// every line, as the heartbeat did, cost thousands of allocations for this spool.
func TestTheSpoolDepthIsCountedWithoutDecodingTheResults(t *testing.T) { // not parallel: AllocsPerRun
	dir := t.TempDir()
	result := json.RawMessage(`{"outcome":"ok","summary":"` + strings.Repeat("x", 2000) + `"}`)
	write := func(name string, n int, tail string) {
		var b strings.Builder
		for job := range n {
			line, err := json.Marshal(spoolEntry{RoundID: 1, Slug: "s", Finish: FinishTx, JobID: int64(job + 1),
				ServerID: 1, Outcome: "ok", Result: result, SpooledAt: time.Now()})
			require.NoError(t, err)
			b.Write(line)
			b.WriteString("\n")
			if job == 0 {
				b.WriteString("\n") // an empty line is no result
			}
		}
		b.WriteString(tail)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o600))
	}
	write("round-1-pid-1-aaaaaaaa.jsonl", 1000, `{"round_id":1,"job_id":99`) // cut short by a crash
	write("round-2-pid-1-bbbbbbbb.jsonl", 3, "")
	write(".round-3-pid-1-cccccccc.jsonl.new", 5, "") // not yet named: not the spool's yet
	write("notes.txt", 7, "")

	c, err := InspectSpool(dir)
	require.NoError(t, err)
	require.Equal(t, SpoolContents{Dir: dir, Files: 2, Results: 1003}, c)
	parsed := 0
	files, err := spoolFiles(dir)
	require.NoError(t, err)
	for _, p := range files {
		entries, _, err := readSpoolFile(p)
		require.NoError(t, err)
		parsed += len(entries)
	}
	require.Equal(t, parsed, c.Results, "the depth is what a replay reads")

	allocs := testing.AllocsPerRun(3, func() {
		_, err := InspectSpool(dir)
		require.NoError(t, err)
	})
	t.Logf("%.0f allocations to count 1003 results in 2 files", allocs)
	require.Less(t, allocs, 100.0, "counting 1003 results must not decode them")

	missing, err := InspectSpool(filepath.Join(dir, "none"))
	require.NoError(t, err)
	require.Zero(t, missing.Results)
}
