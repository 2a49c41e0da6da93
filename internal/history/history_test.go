package history_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("history_tmpl", testfactory.Migrate)

// at is the moment the tests read as of.
var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// run stores a finished job and its run, started ago before at and lasting took; result is the
// JSON the checker would have stored; jobOutcome "" takes the result's outcome.
func run(t *testing.T, db queries.DBTX, server int64, ago, took time.Duration, result map[string]any, jobOutcome string) int64 {
	t.Helper()
	started := at.Add(-ago)
	finished := started.Add(took)
	if jobOutcome == "" {
		jobOutcome = result["outcome"].(string)
	}
	job := testfactory.Job(t.Context(), t, db, &testfactory.JobOpts{ServerID: server, RequestedAt: &started,
		FinishedAt: &finished, Outcome: jobOutcome})
	data, err := json.Marshal(result)
	require.NoError(t, err)
	return testfactory.Run(t.Context(), t, db, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &started,
		FinishedAt: &finished, Result: data})
}

func ok() map[string]any {
	return map[string]any{"outcome": "ok", "summary": "HTTP 200", "requests": []any{}}
}

func TestUptimeLeavesOutRunsAtProbectlsFaultAndLatencyIsOfOkChecks(t *testing.T) {
	t.Parallel()
	db := dbtest.Pool(t, migrated.NewDB(t))
	s := testfactory.Server(t.Context(), t, db, &testfactory.ServerOpts{Slug: "weather"})
	other := testfactory.Server(t.Context(), t, db, nil)

	// Within 24 h: 2 ok, 1 failed, and three runs that say nothing about the server: one
	// interrupted by probectl (today's marking), one marked at its fault, one stored late after its
	// job was closed as abandoned.
	run(t, db, s, 1*time.Hour, 100*time.Millisecond, ok(), "")
	run(t, db, s, 2*time.Hour, 300*time.Millisecond, ok(), "")
	run(t, db, s, 3*time.Hour, 5*time.Second, map[string]any{"outcome": "failed", "summary": "HTTP 404", "error": "HTTP 404 Not Found"}, "")
	run(t, db, s, 4*time.Hour, time.Second, map[string]any{"outcome": "error", "summary": "interrupted", "error": "check interrupted by probectl"}, "")
	run(t, db, s, 5*time.Hour, time.Second, map[string]any{"outcome": "error", "summary": "late", "fault": "probectl"}, "")
	run(t, db, s, 6*time.Hour, time.Second, map[string]any{"outcome": "error", "summary": "timeout"}, "abandoned")
	// Within 7 d: one more failure; within 30 d: one more ok; older: ignored.
	run(t, db, s, 3*24*time.Hour, time.Second, map[string]any{"outcome": "failed", "summary": "HTTP 500"}, "")
	run(t, db, s, 20*24*time.Hour, 200*time.Millisecond, ok(), "")
	run(t, db, s, 40*24*time.Hour, time.Second, map[string]any{"outcome": "failed"}, "")
	// Another server's runs count for it alone.
	run(t, db, other, time.Hour, time.Second, map[string]any{"outcome": "failed"}, "")

	v, err := history.ShowServer(t.Context(), db, "weather", &at)
	require.NoError(t, err)
	require.NotNil(t, v.Uptime24h)
	assert.InDelta(t, 2.0/3, *v.Uptime24h, 1e-9, "2 ok of 3 runs that count")
	assert.InDelta(t, 2.0/4, *v.Uptime7d, 1e-9)
	assert.InDelta(t, 3.0/5, *v.Uptime30d, 1e-9)
	require.NotNil(t, v.LatencyP50)
	assert.Equal(t, 200*time.Millisecond, *v.LatencyP50, "the median of 100, 200 and 300 ms")
	assert.Nil(t, v.Cert)
	assert.Nil(t, v.Tools)
	require.Len(t, v.LastRuns, history.LastRuns-1)
	assert.True(t, v.LastRuns[3].ProbectlFault)
	assert.False(t, v.LastRuns[2].ProbectlFault)
}

func TestAServerWithoutRunsHasNoUptimeRatherThanZero(t *testing.T) {
	t.Parallel()
	db := dbtest.Pool(t, migrated.NewDB(t))
	testfactory.Server(t.Context(), t, db, &testfactory.ServerOpts{Slug: "new", NextCheckAt: testfactory.Ptr(at.Add(-time.Minute))})
	v, err := history.ShowServer(t.Context(), db, "new", &at)
	require.NoError(t, err)
	assert.Nil(t, v.Uptime24h)
	assert.Nil(t, v.Uptime30d)
	assert.Nil(t, v.LatencyP50)
	assert.Equal(t, "due", v.Next.State)
	assert.Empty(t, v.LastRuns)
}

func TestCertificateAndToolsComeFromTheNewestRunsThatSawThem(t *testing.T) {
	t.Parallel()
	db := dbtest.Pool(t, migrated.NewDB(t))
	s := testfactory.Server(t.Context(), t, db, &testfactory.ServerOpts{Slug: "tools", Kind: "mcp"})
	notAfter := at.Add(10*24*time.Hour + time.Hour)
	withTLS := func(n int, until time.Time) map[string]any {
		r := ok()
		r["tools"] = n
		r["requests"] = []any{map[string]any{"method": "POST", "url": "https://x/", "latency_seconds": 0.1, "bytes": 10,
			"tls": map[string]any{"version": "TLS 1.3", "cert_not_after": until.Format(time.RFC3339)}}}
		return r
	}
	run(t, db, s, 5*time.Hour, time.Second, withTLS(3, at.Add(-time.Hour)), "")
	run(t, db, s, 4*time.Hour, time.Second, withTLS(4, notAfter.Add(-24*time.Hour)), "")
	run(t, db, s, 3*time.Hour, time.Second, withTLS(5, notAfter.Add(-24*time.Hour)), "")
	run(t, db, s, 2*time.Hour, time.Second, withTLS(5, notAfter), "")
	run(t, db, s, time.Hour, time.Second, map[string]any{"outcome": "error", "summary": "connect refused"}, "")

	v, err := history.ShowServer(t.Context(), db, "tools", &at)
	require.NoError(t, err)
	require.NotNil(t, v.Cert)
	assert.Equal(t, notAfter, v.Cert.CertNotAfter.UTC())
	assert.Equal(t, 10, *v.CertDaysLeft())
	require.NotNil(t, v.Tools)
	assert.Equal(t, 5, v.Tools.Count)
	assert.Equal(t, at.Add(-3*time.Hour), v.Tools.ChangedAt.UTC(), "5 tools since the first run that listed 5 after the last that listed 4")
}

func TestNextCheckSaysWhyAsTheClaimWouldDecide(t *testing.T) {
	t.Parallel()
	db := dbtest.Pool(t, migrated.NewDB(t))
	past := at.Add(-time.Hour)
	mk := func(slug string, next time.Time, status string) int64 {
		return testfactory.Server(t.Context(), t, db, &testfactory.ServerOpts{Slug: slug, NextCheckAt: &next, Status: status})
	}
	mk("due", past, "")
	mk("later", at.Add(time.Hour), "")
	mk("paused", past, "paused")
	open := mk("open", past, "")
	testfactory.Job(t.Context(), t, db, &testfactory.JobOpts{ServerID: open, RequestedAt: testfactory.Ptr(at.Add(-time.Minute))})
	spaced := mk("spaced", past, "")
	testfactory.Job(t.Context(), t, db, &testfactory.JobOpts{ServerID: spaced, RequestedAt: testfactory.Ptr(at.Add(-2 * time.Minute)),
		FinishedAt: testfactory.Ptr(at.Add(-time.Minute))})

	for slug, want := range map[string]string{"due": "due", "later": "scheduled", "paused": "paused", "open": "open_job", "spaced": "spacing"} {
		v, err := history.ShowServer(t.Context(), db, slug, &at)
		require.NoError(t, err)
		assert.Equal(t, want, v.Next.State, "%s: %s", slug, v.Next.Why)
	}
	v, err := history.ShowServer(t.Context(), db, "spaced", &at)
	require.NoError(t, err)
	assert.Equal(t, at.Add(8*time.Minute), v.Next.At.UTC(), "claimable once the 10 min spacing has passed")
	_, err = history.ShowServer(t.Context(), db, "nope", &at)
	require.ErrorIs(t, err, queries.ErrNoServer)
	_ = fmt.Sprint()
}
