package worker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
)

// peakBound is the memory a process that checks 60 hostile servers at once may reach: the
// Kubernetes manifest's limit.
const peakBound = 256 << 20

// hostileFleet adds 60 hostile MCP servers, due now: 30 serve a page of 15,000 tiny tools as
// JSON, 30 a schema of 75,000 sub-schemas as server-sent events; each page is about 700 KB.
func hostileFleet(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	opts := testfactory.ServerOpts{Kind: "mcp", Plan: "frequent", NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Minute))}
	fakefleet.New(t, fakefleet.HostileMCP(fakefleet.ManyToolsResult(15000), false)).AddServers(t, pool, 30, "many", opts)
	fakefleet.New(t, fakefleet.HostileMCP(fakefleet.SchemaBombResult(75000), true)).AddServers(t, pool, 30, "bomb", opts)
}

// requireAllFailedBeforeDecoding holds the 60 stored runs to the bound's reason.
func requireAllFailedBeforeDecoding(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	assert.Equal(t, 60, queryInt(t, pool, `SELECT count(*)::int FROM probe_runs
	   WHERE result ->> 'outcome' = 'failed' AND result ->> 'summary' = 'response too large to decode'
	     AND result ->> 'error' LIKE '%stopped reading before decoding it%'`),
		"every check failed as the server's fault, saying why")
}

// A round at the default settings (60 checks at once) over 60 servers that each serve a page
// which would decode into tens of megabytes stays under 256 MiB and stores all 60 results.
func TestARoundOfSixtyHostileServersStaysUnder256MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds probectl and runs a round of 60 checks in it")
	}
	bin := buildBinary(t)
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	hostileFleet(t, pool)

	cmd := exec.Command(bin, "run", "round", "--unsigned", "--allow-private-targets", "-o", "json")
	cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url, "GOMEMLIMIT=")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &exitErr, "%s", out)
	}
	require.NotNil(t, cmd.ProcessState)
	// ru_maxrss is the process's peak resident set (the kernel's hiwater_rss, VmHWM), in KiB.
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("run round: peak RSS %.1f MiB, exit %d", float64(peak)/(1<<20), cmd.ProcessState.ExitCode())
	assert.Less(t, peak, int64(peakBound))
	assert.Equal(t, 60, queryInt(t, pool, "SELECT count(*)::int FROM probe_runs"), "%s", out)
	requireAllFailedBeforeDecoding(t, pool)
}

// vmHWM reads a live process's peak resident set from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	require.NoError(t, err)
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

