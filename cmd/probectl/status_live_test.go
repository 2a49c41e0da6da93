package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/internal/testfactory"
)

// A healthy round in flight is not the incident's signature: while its checks are held by the
// servers, every job's server waits for its lease's end (where the claim put it), and status says
// "in flight", never "advanced" (a probe that died between its two writes).
func TestStatusOfALiveRoundShowsItsJobsInFlightNotAdvanced(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	const servers = 3
	arrived := make(chan struct{}, servers)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	fleet := fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		fakefleet.OK(w, r)
	}))
	fleet.AddServers(t, pool, servers, "held", testfactory.ServerOpts{})

	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
			"--fanout", "0", "--claim-limit", "3", "--concurrency", "3")
	}()
	for range servers {
		<-arrived
	}

	// Every check is now held by its server: the round is in flight, and healthy.
	js := runCLI(t, "--database-url", url, "status", "-o", "json")
	require.Equal(t, 0, js.Code, js.Stderr)
	var got struct {
		OpenJobs []struct {
			Slug           string `json:"slug"`
			ServerAdvanced bool   `json:"server_advanced"`
			ServerLeased   bool   `json:"server_leased"`
			Stale          bool   `json:"stale"`
		} `json:"open_jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.Stdout), &got), js.Stdout)
	require.Len(t, got.OpenJobs, servers)
	for _, j := range got.OpenJobs {
		assert.False(t, j.ServerAdvanced, "%s: a job in flight under its lease is not advanced", j.Slug)
		assert.True(t, j.ServerLeased, "%s: its server waits for the lease's end", j.Slug)
		assert.False(t, j.Stale, j.Slug)
	}

	table := runCLI(t, "--database-url", url, "status")
	require.Equal(t, 0, table.Code, table.Stderr)
	assert.NotContains(t, table.Stdout, "advanced", "no job of a healthy round is the incident's signature")
	assert.NotContains(t, table.Stdout, "died between its two writes")
	assert.Contains(t, table.Stdout, "in flight")

	// The page reads the same rows, while the checks are still held.
	h := statuspage.Handler(statuspage.Options{DB: pool})
	for path, inFlight := range map[string]string{"/status": "in flight", "/zh/status": "检查中"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		assert.NotContains(t, rec.Body.String(), `class="badge advanced"`, "%s: no job of a healthy round is advanced", path)
		assert.Equal(t, servers, strings.Count(rec.Body.String(), `<span class="badge open">`+inFlight+`</span>`), path)
	}

	once.Do(func() { close(release) })
	res := <-done
	require.Equal(t, 0, res.Code, res.Stderr)
	after := runCLI(t, "--database-url", url, "status", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(after.Stdout), &got))
	assert.Empty(t, got.OpenJobs, "the round finished every job")
}

// The real signature still shows: a job whose server was advanced past its lease and which was never
// finished (a probe that died between advance and finish, in the two-write mode) is advanced.
func TestStatusStillFlagsAJobAdvancedPastItsLease(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	requested := time.Now().Add(-2 * time.Minute)
	// A job claimed, then its server advanced to its next interval, never finished.
	id := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "left",
		NextCheckAt: testfactory.Ptr(requested.Add(12 * time.Hour))})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: id, RequestedAt: &requested})
	js := runCLI(t, "--database-url", url, "status", "-o", "json")
	require.Equal(t, 0, js.Code, js.Stderr)
	var got struct {
		OpenJobs []struct {
			ServerAdvanced bool `json:"server_advanced"`
			ServerLeased   bool `json:"server_leased"`
		} `json:"open_jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.Stdout), &got), js.Stdout)
	require.Len(t, got.OpenJobs, 1)
	assert.True(t, got.OpenJobs[0].ServerAdvanced)
	assert.False(t, got.OpenJobs[0].ServerLeased)
}

// `probectl status` and the status page warn by one rule (status.Report.NoWorkerAlive): invocations
// wait and no worker is alive, whether or not dead or stopped workers were heard from.
func TestStatusAndThePageWarnThatNoWorkerIsAliveByOneRule(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	statustest.SeedWorkers(ctx, t, pool)
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return statustest.Now }})
	page := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
		return rec.Body.String()
	}
	const cliWarning, pageWarning = "no worker is alive to run the waiting invocations", "No worker is alive to run the waiting invocations"

	out, _, err := statusAt(t, url)
	require.NoError(t, err)
	assert.NotContains(t, out, cliWarning, "two workers are alive")
	assert.NotContains(t, page(), pageWarning, "two workers are alive")

	// The live ones go silent: every worker heard from is dead or stopped, two invocations wait.
	_, err = pool.Exec(ctx, `UPDATE probectl_workers SET heartbeat_at = $1 WHERE stopped_at IS NULL`,
		statustest.Now.Add(-5*time.Minute))
	require.NoError(t, err)
	out, _, err = statusAt(t, url)
	require.NoError(t, err)
	assert.Contains(t, out, cliWarning)
	assert.Contains(t, page(), pageWarning)
}
