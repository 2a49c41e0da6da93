package worker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/memlimit"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
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

// A round over 60 servers whose pages are just inside every decode bound (990 tools of eleven
// values and 900-byte descriptions, about 1 MB a page, page after page) is the most the bounds
// let through: its checks succeed, and under the soft limit a 256Mi container gives the runtime
// (memlimit.Share of it) it too stays under 256 MiB (155–167 MiB measured; 204–240 without the
// decode slots).
func TestARoundOfSixtyServersJustInsideTheBoundsStaysUnder256MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds probectl and runs a round of 60 checks in it")
	}
	page := fakefleet.NearBoundsResult(990, 900)
	require.Less(t, len(page), 1<<20)
	bin := buildBinary(t)
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	opts := testfactory.ServerOpts{Kind: "mcp", Plan: "frequent", NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Minute))}
	fakefleet.New(t, fakefleet.HostileMCP(page, false)).AddServers(t, pool, 60, "near", opts)

	cmd := exec.Command(bin, "run", "round", "--unsigned", "--allow-private-targets", "-o", "json")
	cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url, "GOMEMLIMIT="+podLimit())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("run round: peak RSS %.1f MiB", float64(peak)/(1<<20))
	assert.Less(t, peak, int64(peakBound))
	assert.Equal(t, 60, queryInt(t, pool, `SELECT count(*)::int FROM probe_runs
	   WHERE result ->> 'outcome' = 'ok' AND (result ->> 'tools_truncated')::boolean`), "%s", out)
}

// podLimit is the soft limit the worker sets itself in a container of the manifest's 256Mi.
func podLimit() string {
	limit := int64(peakBound)
	return strconv.FormatInt(int64(float64(limit)*memlimit.Share), 10)
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

// manifest is what the tests read of deploy/kubernetes/worker.yaml.
type manifest struct {
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext struct {
					RunAsUser  *int64 `yaml:"runAsUser"`
					RunAsGroup *int64 `yaml:"runAsGroup"`
					FSGroup    *int64 `yaml:"fsGroup"`
				} `yaml:"securityContext"`
				Containers []struct {
					Args      []string `yaml:"args"`
					Resources struct {
						Limits struct {
							Memory string `yaml:"memory"`
						} `yaml:"limits"`
					} `yaml:"resources"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/kubernetes/worker.yaml")
	require.NoError(t, err)
	var m manifest
	require.NoError(t, yaml.Unmarshal(raw, &m))
	require.Len(t, m.Spec.Template.Spec.Containers, 1)
	return m
}

// mebibytes reads a Kubernetes quantity in Mi.
func mebibytes(t *testing.T, q string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(q, "Mi"), 10, 64)
	require.NoError(t, err, "a memory limit in Mi: %q", q)
	return n << 20
}

// The manifest's worker (its arguments, its memory limit given to the runtime as the container
// would: GOMEMLIMIT at memlimit.Share of it) survives a round of the 60 hostile servers, stores
// every result and stays under the limit; and so it does for 60 servers just inside the bounds,
// whose checks succeed (a worker's invocations share one process's decode slots).
func TestTheKubernetesWorkerSurvivesARoundOfSixtyHostileServers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds probectl and runs a worker through rounds of 60 checks")
	}
	bin := buildBinary(t)
	t.Run("hostile pages", func(t *testing.T) {
		pool := manifestWorkerRound(t, bin, hostileFleet)
		requireAllFailedBeforeDecoding(t, pool)
	})
	t.Run("pages just inside the bounds", func(t *testing.T) {
		pool := manifestWorkerRound(t, bin, func(t *testing.T, pool *pgxpool.Pool) {
			opts := testfactory.ServerOpts{Kind: "mcp", Plan: "frequent", NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Minute))}
			fakefleet.New(t, fakefleet.HostileMCP(fakefleet.NearBoundsResult(990, 900), false)).AddServers(t, pool, 60, "near", opts)
		})
		assert.Equal(t, 60, queryInt(t, pool, `SELECT count(*)::int FROM probe_runs
		   WHERE result ->> 'outcome' = 'ok' AND (result ->> 'tools_truncated')::boolean`))
	})
}

// manifestWorkerRound runs the manifest's worker over the 60 servers fleet adds until their 60
// runs are stored, holds it under the manifest's limit, and stops it with SIGTERM.
func manifestWorkerRound(t *testing.T, bin string, fleet func(*testing.T, *pgxpool.Pool)) *pgxpool.Pool {
	m := readManifest(t)
	c := m.Spec.Template.Spec.Containers[0]
	limit := mebibytes(t, c.Resources.Limits.Memory)
	require.Equal(t, int64(256<<20), limit, "the limit this test is about")

	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	fleet(t, pool)
	_, err := release.Record(context.Background(), pool, release.RecordRequest{Version: "dev",
		Settings: settings.Default().Carried, Every: 5 * time.Second, Actor: "test"})
	require.NoError(t, err)

	args := slices.Clone(c.Args)
	spool := filepath.Join(t.TempDir(), "spool")
	i := slices.Index(args, "--spool-dir")
	require.Positive(t, i)
	args[i+1] = spool
	// The fleet is on loopback, and this test is about memory, not keys (see the securityContext test).
	args = append(args, "--unsigned", "--allow-private-targets")
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan error, 1), spool: spool}
	p.cmd.Env = append(os.Environ(), "PROBECTL_DATABASE_URL="+url,
		"GOMEMLIMIT="+strconv.FormatInt(int64(float64(limit)*memlimit.Share), 10))
	logs, err := os.Create(filepath.Join(t.TempDir(), "worker.log"))
	require.NoError(t, err)
	p.cmd.Stderr = logs
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if t.Failed() {
			raw, _ := os.ReadFile(logs.Name())
			t.Logf("worker:\n%s", raw)
		}
	})

	eventually(t, "60 runs stored", 2*time.Minute, func() bool {
		select {
		case err := <-p.done:
			t.Fatalf("the worker died mid-round: %v", err)
		default:
		}
		return queryInt(t, pool, "SELECT count(*)::int FROM probe_runs") == 60
	})
	peak := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("worker (%s): peak RSS %.1f MiB", strings.Join(c.Args, " "), float64(peak)/(1<<20))
	assert.Less(t, peak, limit)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		require.NoError(t, err, "alive until asked to stop, then exits 0")
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not stop within 60 s of SIGTERM")
	}
	return pool
}
