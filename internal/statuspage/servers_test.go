package statuspage_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/internal/testfactory"
)

// historyNow is when the history scenario is seen.
var historyNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// reason404 is the failing run's reason the pages must show.
const reason404 = "HTTP 404 Not Found"

// seedHistory stores a directory with a history: "weather" ran ok 5 times then failed with a 404;
// "clock" is ok with a certificate expiring in 3 days; "fresh" never ran; "gone" is paused.
func seedHistory(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := t.Context()
	run := func(server int64, ago time.Duration, took time.Duration, result map[string]any) {
		started := historyNow.Add(-ago)
		finished := started.Add(took)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &started,
			FinishedAt: &finished, Outcome: result["outcome"].(string)})
		data, err := json.Marshal(result)
		require.NoError(t, err)
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &started,
			FinishedAt: &finished, Result: data})
	}
	weather := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather", Kind: "mcp",
		URL: "https://weather.example/mcp?token=secret"})
	for i := range 5 {
		r := map[string]any{"outcome": "ok", "summary": "initialize, tools/list", "tools": 3 + i/3, "requests": []any{}}
		run(weather, time.Duration(6-i)*12*time.Hour, time.Duration(100+20*i)*time.Millisecond, r)
	}
	run(weather, time.Hour, 2*time.Second, map[string]any{"outcome": "failed", "summary": "HTTP 404", "error": reason404, "requests": []any{}})
	clock := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "clock"})
	run(clock, 2*time.Hour, 50*time.Millisecond, map[string]any{"outcome": "ok", "summary": "HTTP 200", "requests": []any{
		map[string]any{"method": "GET", "url": "https://clock.example/", "status": 200, "latency_seconds": 0.05, "bytes": 3,
			"tls": map[string]any{"version": "TLS 1.3", "cert_not_after": historyNow.Add(3 * 24 * time.Hour).Format(time.RFC3339)}}}})
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "fresh"})
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "gone", Status: "paused"})
}

func historyHandler(t *testing.T) http.Handler {
	t.Helper()
	pool := migrated.Pool(t)
	seedHistory(t, pool)
	return statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return historyNow }})
}

func TestTheServerPageShowsTheFailingRunsReasonAndItsHistoryInBothLanguages(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	for _, path := range []string{"/servers/weather", "/zh/servers/weather"} {
		res := get(t, h, path)
		require.Equal(t, http.StatusOK, res.Code, res.Body)
		assert.Contains(t, res.Body, reason404)
		assert.Equal(t, 6, strings.Count(res.Body, `<rect class="cell `), "one cell per run")
		assert.Contains(t, res.Body, `<rect class="cell failed"`)
		assert.Contains(t, res.Body, `id="latency-chart"`)
		assert.Contains(t, res.Body, `<polyline`, "a latency line over the ok checks")
		assert.Contains(t, res.Body, `id="tools-chart"`)
		assert.NotContains(t, res.Body, "secret", "the endpoint's query is redacted")
		assert.NotContains(t, res.Body, "<script")
		assert.Equal(t, "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
			res.Header.Get("Content-Security-Policy"), "the CSP is unchanged")
	}
	res := get(t, h, "/servers/weather")
	assert.Contains(t, res.Body, "30 d 83.3%", "5 ok of 6 runs")
	assert.Contains(t, res.Body, "4, since ")
	res = get(t, h, "/zh/servers/weather")
	assert.Contains(t, res.Body, `lang="zh-CN"`)
	assert.Contains(t, res.Body, "失败")

	res = get(t, h, "/servers/nope")
	assert.Equal(t, http.StatusNotFound, res.Code)
	assert.Contains(t, res.Body, "No server has this slug.")
}

func TestTheDirectoryPageCountsByLastOutcomeAndNamesFailingServersAndExpiringCertificates(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	res := get(t, h, "/servers")
	require.Equal(t, http.StatusOK, res.Code, res.Body)
	failing := between(t, res.Body, `<div id="failing">`, `</div>`)
	assert.Contains(t, failing, "weather")
	assert.NotContains(t, failing, "clock")
	expiring := between(t, res.Body, `<div id="expiring">`, `</div>`)
	assert.Contains(t, expiring, "clock")
	assert.Contains(t, res.Body, `href="/servers/weather"`)

	res = get(t, h, "/servers.json?sort=uptime&desc=1&per_page=2")
	require.Equal(t, http.StatusOK, res.Code, res.Body)
	var d struct {
		Counts  map[string]int64 `json:"counts"`
		Total   int64            `json:"total"`
		Pages   int              `json:"pages"`
		Servers []struct {
			Slug      string   `json:"slug"`
			Uptime30d *float64 `json:"uptime_30d"`
		} `json:"servers"`
		FailingTotal  int64   `json:"failing_total"`
		ExpiringTotal int64   `json:"expiring_total"`
		Prev          *string `json:"prev"`
		Next          *string `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &d))
	assert.Equal(t, map[string]int64{"ok": 1, "failed": 1, "never_run": 1}, d.Counts, "active servers only")
	assert.Equal(t, int64(4), d.Total)
	assert.Equal(t, 2, d.Pages)
	require.Len(t, d.Servers, 2)
	assert.Equal(t, "clock", d.Servers[0].Slug, "100% first")
	assert.Equal(t, "weather", d.Servers[1].Slug)
	assert.Equal(t, int64(1), d.FailingTotal)
	assert.Equal(t, int64(1), d.ExpiringTotal)

	// The next page by its link (a cursor), and back.
	require.Nil(t, d.Prev)
	require.NotNil(t, d.Next)
	assert.Contains(t, *d.Next, "after=")
	next := d
	res = get(t, h, *d.Next)
	require.Equal(t, http.StatusOK, res.Code, res.Body)
	require.NoError(t, json.Unmarshal([]byte(res.Body), &next))
	require.Len(t, next.Servers, 2)
	assert.NotContains(t, []string{"clock", "weather"}, next.Servers[0].Slug)
	assert.Nil(t, next.Next, "the last page")
	require.NotNil(t, next.Prev)
	res = get(t, h, *next.Prev)
	var back struct {
		Servers []struct {
			Slug string `json:"slug"`
		} `json:"servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &back))
	require.Len(t, back.Servers, 2)
	assert.Equal(t, "clock", back.Servers[0].Slug)
	page := get(t, h, "/servers?sort=uptime&desc=1&per_page=2")
	assert.Contains(t, page.Body, html.EscapeString(strings.Replace(*d.Next, "/servers.json", "/servers", 1)), "the page links the same cursor")

	for _, bad := range []string{"sort=name", "page=0", "per_page=501", "page=x", "after=x", "before=bm90IGpzb24", "after=" + strings.Repeat("a", 600)} {
		res = get(t, h, "/servers.json?"+bad)
		assert.Equal(t, http.StatusBadRequest, res.Code, bad)
		assert.Contains(t, res.Body, "error", bad)
		assert.Contains(t, res.Body, strings.SplitN(bad, "=", 2)[0], bad)
	}
}

func TestTheBadgeSaysUptimeOrTheLastOutcomeAndIsCacheable(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	res := get(t, h, "/badge/clock.svg")
	require.Equal(t, http.StatusOK, res.Code)
	assert.Equal(t, "image/svg+xml", res.Header.Get("Content-Type"))
	assert.Equal(t, "public, max-age=300", res.Header.Get("Cache-Control"))
	assert.Contains(t, res.Body, "up 100.0%")
	assert.Contains(t, res.Body, ">http<")
	res = get(t, h, "/badge/fresh.svg")
	assert.Contains(t, res.Body, "not checked yet")
	for _, path := range []string{"/badge/nope.svg", "/badge/clock"} {
		assert.Equal(t, http.StatusNotFound, get(t, h, path).Code, path)
	}
}

func TestKeysAreServedAsPEMAndJSONWithTheirRetirement(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	_, err := pool.Exec(t.Context(), `INSERT INTO signing_keys (key_id, public_key, retired_at) VALUES
		('ed25519:aaaa', decode(repeat('11', 32), 'hex'), NULL),
		('ed25519:bbbb', decode(repeat('22', 32), 'hex'), '2026-11-01T00:00:00Z')`)
	require.NoError(t, err)
	h := statuspage.Handler(statuspage.Options{DB: pool})
	res := get(t, h, "/keys")
	require.Equal(t, http.StatusOK, res.Code, res.Body)
	var keys []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Body), &keys))
	require.Len(t, keys, 2)
	assert.Nil(t, keys[0]["retired_at"])
	assert.Equal(t, "2026-11-01T00:00:00Z", keys[1]["retired_at"])
	assert.True(t, strings.HasPrefix(keys[0]["public_key_pem"].(string), "-----BEGIN PUBLIC KEY-----"))
	res = get(t, h, "/keys.pem")
	assert.Equal(t, 2, strings.Count(res.Body, "BEGIN PUBLIC KEY"))
	assert.Contains(t, res.Body, "# ed25519:bbbb (ed25519, registered ")
	// The retired key's block carries its retirement as `keys export` does, for `runs verify`.
	assert.Contains(t, res.Body, "retired 2026-11-01T00:00:00Z)\nRetired-At: 2026-11-01T00:00:00Z\n-----BEGIN PUBLIC KEY-----")
	assert.Equal(t, 1, strings.Count(res.Body, "Retired-At:"))
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, from)
	require.True(t, ok, "no %s in %s", from, s)
	out, _, _ := strings.Cut(rest, to)
	return out
}

var _ = fmt.Sprint

func TestMetricsCountRunsByKindAndOutcomeWithALatencyHistogramAndNoServerLabel(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	res := get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, res.Code, res.Body)
	for _, line := range []string{
		`probectl_runs_total{kind="mcp",outcome="ok"} 5`,
		`probectl_runs_total{kind="mcp",outcome="failed"} 1`,
		`probectl_runs_total{kind="http",outcome="ok"} 1`,
		`probectl_check_duration_seconds_bucket{kind="mcp",le="0.1"} 1`,
		`probectl_check_duration_seconds_bucket{kind="mcp",le="0.25"} 5`,
		`probectl_check_duration_seconds_bucket{kind="mcp",le="2.5"} 6`,
		`probectl_check_duration_seconds_bucket{kind="mcp",le="+Inf"} 6`,
		`probectl_check_duration_seconds_count{kind="mcp"} 6`,
		"# TYPE probectl_check_duration_seconds histogram",
	} {
		assert.Contains(t, res.Body, line+"\n")
	}
	assert.NotContains(t, res.Body, "weather", "no label names a server")
	parseMetrics(t, res.Body)
}
