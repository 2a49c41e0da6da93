package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The demos run end to end here, in-process, each with its own throwaway PostgreSQL and fleet:
// they need PostgreSQL's server binaries, as every database test does.

// demoDoc is the part of 'probectl demo -o json' the tests read.
type demoDoc struct {
	Scenario string `json:"scenario"`
	Servers  int    `json:"servers"`
	Rounds   []struct {
		Jobs     int `json:"jobs"`
		Runs     int `json:"runs"`
		Servers  int `json:"servers"`
		OpenJobs int `json:"open_jobs"`
		Settings struct {
			Fanout      int    `json:"fanout"`
			ClaimLimit  int    `json:"claim_limit"`
			Concurrency int    `json:"concurrency"`
			Finish      string `json:"finish"`
		} `json:"settings"`
	} `json:"rounds"`
	Verify []struct {
		Verdict string `json:"verdict"`
		Rounds  []struct {
			SecondClaims []struct {
				Slug                  string   `json:"slug"`
				GapAfterFinishSeconds *float64 `json:"gap_after_finish_seconds"`
			} `json:"second_claims"`
		} `json:"rounds"`
		Checks []struct {
			Name   string   `json:"name"`
			Status string   `json:"status"`
			Items  []string `json:"items"`
		} `json:"checks"`
	} `json:"verify"`
	Duplicates struct {
		Population struct {
			Jobs int `json:"jobs"`
		} `json:"population"`
		DuplicateCount int              `json:"duplicate_count"`
		Pairs          []map[string]any `json:"duplicates"`
		Periods        []struct {
			Jobs        int `json:"jobs"`
			Pairs       int `json:"pairs"`
			Unexplained int `json:"unexplained"`
		} `json:"periods"`
	} `json:"duplicates"`
	Rollback struct {
		Way     string `json:"way"`
		DryRun  bool   `json:"dry_run"`
		Applied bool   `json:"applied"`
	} `json:"rollback"`
	Kept *struct{} `json:"kept"`
}

func runDemoJSON(t *testing.T, args ...string) (demoDoc, map[string]json.RawMessage, cliResult) {
	t.Helper()
	res := cli{env: map[string]string{"USER": "ana"}}.run(t, append([]string{"demo", "-o", "json"}, args...)...)
	require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
	var doc demoDoc
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &doc), res.Stdout)
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &keys))
	return doc, keys, res
}

func TestTheDemoChecksEveryServerOnceAndVerifyPasses(t *testing.T) {
	t.Parallel()
	doc, keys, res := runDemoJSON(t)

	require.Equal(t, "demo", doc.Scenario)
	require.Equal(t, 300, doc.Servers)
	require.GreaterOrEqual(t, len(doc.Rounds), 3, "a few hundred servers at 20 × 5 a round take several rounds")
	jobs := 0
	for i, r := range doc.Rounds {
		assert.Equal(t, r.Jobs, r.Runs, "round %d", i+1)
		assert.Equal(t, r.Jobs, r.Servers, "round %d", i+1)
		assert.Zero(t, r.OpenJobs, "round %d", i+1)
		assert.Equal(t, []any{19, 5, 3, "tx"}, []any{r.Settings.Fanout, r.Settings.ClaimLimit, r.Settings.Concurrency, r.Settings.Finish})
		jobs += r.Jobs
	}
	require.Equal(t, doc.Servers, jobs, "every server claimed exactly once")
	require.Len(t, doc.Verify, 1)
	require.Equal(t, "pass", doc.Verify[0].Verdict)
	require.Equal(t, doc.Servers, doc.Duplicates.Population.Jobs, "the audit read every job")
	require.Zero(t, doc.Duplicates.DuplicateCount)
	require.Empty(t, doc.Duplicates.Pairs)
	require.Equal(t, "fanout-off", doc.Rollback.Way)
	require.True(t, doc.Rollback.DryRun)
	require.False(t, doc.Rollback.Applied, "the default demo only plans the rollback")
	require.Nil(t, doc.Kept)

	// The documented shape (docs/demo.md), and the narration kept off stdout.
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	require.Equal(t, []string{"duplicates", "duration_seconds", "fleet", "kept", "rollback", "rounds", "scenario", "servers", "verify"}, names)
	require.Contains(t, res.Stderr, "1/7 starting a throwaway PostgreSQL…")
	require.Contains(t, res.Stderr, "the fleet and PostgreSQL are stopped and their files removed")
	requireCopyableCommands(t, res.Stderr)
}

func TestTheIncidentReplayFindsDuplicateClaimsWhileFanOutIsLiveAndNoneAfterTheRollback(t *testing.T) {
	t.Parallel()
	doc, _, res := runDemoJSON(t, "--reproduce-incident")

	require.Equal(t, "reproduce-incident", doc.Scenario)
	require.Len(t, doc.Duplicates.Periods, 3, "split at the deploy and at the rollback")
	before, during, after := doc.Duplicates.Periods[0], doc.Duplicates.Periods[1], doc.Duplicates.Periods[2]
	require.GreaterOrEqual(t, during.Unexplained, 1, "the replay must really check a server twice while fan-out is live")
	require.Zero(t, before.Pairs, "one sequential claimer: the old order never showed")
	require.Zero(t, after.Pairs, "after the rollback the next rounds are clean")
	require.Equal(t, during.Pairs, doc.Duplicates.DuplicateCount)
	require.Len(t, doc.Duplicates.Pairs, during.Pairs)
	require.Positive(t, before.Jobs)
	require.Positive(t, after.Jobs)

	require.Len(t, doc.Verify, 2)
	caught := doc.Verify[0]
	require.Equal(t, "fail", caught.Verdict)
	var named []string
	for _, c := range caught.Checks {
		if c.Name == "duplicates" {
			require.Equal(t, "fail", c.Status)
			named = c.Items
		}
	}
	require.NotEmpty(t, named, "verify names the servers claimed twice")
	var gaps int
	for _, r := range caught.Rounds {
		for _, sc := range r.SecondClaims {
			require.NotNil(t, sc.GapAfterFinishSeconds, "server %s: the gap after the first job finished", sc.Slug)
			gaps++
		}
	}
	require.Equal(t, during.Pairs, gaps, "every pair of the fan-out period is in verify's rounds, with its gap")
	require.Equal(t, "pass", doc.Verify[1].Verdict, "deploy verify after the rollback")

	require.Equal(t, "fanout-off", doc.Rollback.Way)
	require.True(t, doc.Rollback.Applied, "the rollback is applied to the demo's own database")
	last := doc.Rounds[len(doc.Rounds)-1].Settings
	require.Equal(t, []int{0, 1}, []int{last.Fanout, last.Concurrency}, "the rounds after the rollback run fan-out off")
	require.Contains(t, res.Stderr, "9/9 ")
	requireCopyableCommands(t, res.Stderr)
	t.Logf("%d duplicate claim(s) while fan-out was live, %d jobs", during.Unexplained, during.Jobs)
}

var keptURL = regexp.MustCompile(`export PROBECTL_DATABASE_URL='([^']+)'`)
var keptStop = regexp.MustCompile(`kill -INT (\d+); .* rm -rf (\S+)`)

func TestTheDemoNarratesOnStderrShowsTheCommandsOnStdoutAndKeepsTheDatabase(t *testing.T) {
	t.Parallel()
	io, _, out, errOut := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "dev"})
	f.Output = "table"
	err := runDemo(context.Background(), &demoOptions{f: f, Keep: true, servers: 40})
	require.NoError(t, err, errOut.String())

	m := keptStop.FindStringSubmatch(errOut.String())
	require.NotNil(t, m, "--keep says how to stop the database:\n%s", errOut.String())
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	t.Cleanup(func() {
		stopProcess(t, pid)
		os.RemoveAll(m[2])
	})

	stdout, stderr := out.String(), errOut.String()
	for _, want := range []string{"ROUND  INVOCATIONS  JOBS  RUNS  SERVERS", "verdict: pass",
		"duplicates  0 (0 unexplained", "rollback would switch fan-out off", "dry run: nothing changed"} {
		require.Contains(t, stdout, want)
	}
	for _, step := range []string{"1/7 starting a throwaway PostgreSQL…", "5/7 running parallel rounds", "7/7 "} {
		require.Contains(t, stderr, step)
		require.NotContains(t, stdout, step, "narration stays off stdout")
	}
	require.NotContains(t, stderr, "verdict:", "the commands' output stays off stderr")

	u := keptURL.FindStringSubmatch(stderr)
	require.NotNil(t, u, stderr)
	status := cli{env: map[string]string{"PROBECTL_DATABASE_URL": u[1]}}.run(t, "status", "-o", "json")
	require.Equal(t, 0, status.Code, "the kept database answers after the demo: %s", status.Stderr)
	requireCopyableCommands(t, stderr)
}

func stopProcess(t *testing.T, pid int) {
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		return
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Errorf("the kept PostgreSQL (pid %d) did not stop", pid)
}

func TestTheDemoSaysWhatToInstallWhenPostgreSQLIsMissing(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "demo", "--pg-bin-dir", t.TempDir())
	require.Equal(t, 3, res.Code)
	require.Contains(t, res.Stderr, "probectl demo needs PostgreSQL's server binaries (initdb and postgres)")
	require.Contains(t, res.Stderr, "apt-get install postgresql")
	require.Empty(t, res.Stdout)
	require.False(t, strings.Contains(res.Stderr, "2/7"), "nothing after the database was tried")
}
