package worker_test

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/fakefleet"
)

// roundRSSGrowth is how much more a round's peak RSS may be for twice the servers, at the same
// slots: the memory of a round follows its slots (checks in flight, finishes waiting), never the
// servers it claims. Twice the servers held in memory showed as 1.4x and more.
const roundRSSGrowth = 1.2

// A round's peak RSS does not grow with the servers it claims: `probectl run round`, a real
// process, checks N and then 2N due servers (a loopback fleet that answers at once, in this test's
// process) with the same slots, and the two peaks are compared as a ratio, not against a time.
// Before the bound on finishes waiting (probe/invocation.go, finishing), the checks of a round
// ended faster than their finishes committed, and every result waited in memory.
//
//	PROBECTL_RSS_SERVERS  N (default 2000)
//	PROBECTL_RSS_SLOTS    checks at a time per invocation, of 20 invocations (default 10)
func TestARoundsPeakRSSDoesNotGrowWithTheServersItClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("builds probectl and runs two rounds of thousands of checks in it")
	}
	n := envOr(t, "PROBECTL_RSS_SERVERS", 2000)
	concurrency := envOr(t, "PROBECTL_RSS_SLOTS", 10)
	bin := buildBinary(t)
	fleet := fakefleet.NewCounting(t, nil)

	peak := func(servers int) int64 {
		url := migrated.NewDB(t)
		pool := dbtest.Pool(t, url)
		_, err := pool.Exec(t.Context(), `INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at)
		    SELECT 'rss-' || g, $2::text || '/s/' || g, 'http', 'standard', interval '12 hours', now() - interval '1 hour'
		      FROM generate_series(1, $1::int) AS g`, servers, fleet.URL)
		require.NoError(t, err)
		cmd := exec.Command(bin, "run", "round", "--unsigned", "--allow-private-targets", "-q", "-o", "json",
			"--fanout", "19", "--concurrency", strconv.Itoa(concurrency),
			"--claim-limit", strconv.Itoa((servers+19)/20), "--max-duration", "10m")
		cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url, "GOMEMLIMIT=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, servers, queryInt(t, pool, "SELECT count(*)::int FROM probe_runs"), "every server checked once")
		// ru_maxrss is the process's peak resident set (VmHWM), in KiB.
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	}
	one, two := peak(n), peak(2*n)
	ratio := float64(two) / float64(one)
	t.Logf("peak RSS of a round at %d slots: %d servers %.1f MiB, %d servers %.1f MiB (%.2fx)",
		20*concurrency, n, float64(one)/(1<<20), 2*n, float64(two)/(1<<20), ratio)
	assert.Less(t, ratio, roundRSSGrowth, "a round's memory grew with the servers it claimed")
}

// envOr reads a positive size from the environment, def when unset.
func envOr(t *testing.T, name string, def int) int {
	t.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := strconv.Atoi(raw)
	require.NoError(t, err, "%s", name)
	require.Positive(t, v, "%s", name)
	return v
}
