package statuspage_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
)

func TestPagesShowTheOpenJobsInTheirLanguage(t *testing.T) {
	t.Parallel()
	h, _, _ := seeded(t)
	cases := []struct {
		name, path, lang, other                string
		stale, open, advanced, staleAge, bwAge string
		heading                                string
	}{
		{"the English page", "/status", "en", "/zh/status",
			"stale", "open", "advanced, not finished", "40m", "4m12s", "Open jobs"},
		{"the Chinese page", "/zh/status", "zh-CN", "/status",
			"已超时", "未结束", "已推后、未结束", "40分", "4分12秒", "未结束的任务"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := get(t, h, c.path)
			require.Equal(t, http.StatusOK, res.Code)
			require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
			require.Contains(t, res.Body, `<html lang="`+c.lang+`">`)
			require.Contains(t, res.Body, `href="`+c.other+`"`, "links to the other language")
			require.Contains(t, res.Body, `<meta http-equiv="refresh" content="30">`)
			require.Contains(t, res.Body, `<meta name="viewport" content="width=device-width, initial-scale=1">`)
			require.Contains(t, res.Body, "<h2>"+c.heading+"</h2>")

			stale := row(t, res.Body, statustest.Stale)
			require.Contains(t, stale, `class="stale"`)
			require.Contains(t, stale, c.stale)
			require.Contains(t, stale, c.staleAge)

			bw := row(t, res.Body, statustest.BetweenWrites)
			require.Contains(t, bw, c.open)
			require.Contains(t, bw, c.advanced)
			require.Contains(t, bw, c.bwAge)
			require.NotContains(t, bw, `class="stale"`)

			require.Contains(t, res.Body, statustest.Duplicate, "the duplicate pair is listed")
			require.Contains(t, res.Body, "0.168", "with the gap after the first job finished")
		})
	}
}

// row returns the table row of the open-jobs table that names slug.
func row(t *testing.T, html, slug string) string {
	t.Helper()
	section := html[strings.Index(html, `<section id="open-jobs">`):]
	section = section[:strings.Index(section, "</section>")]
	for _, r := range strings.Split(section, "<tr") {
		if strings.Contains(r, ">"+slug+"<") {
			return r
		}
	}
	t.Fatalf("no row for %s in the open jobs:\n%s", slug, section)
	return ""
}

func TestPagesLoadNothingFromElsewhere(t *testing.T) {
	t.Parallel()
	h, _, _ := seeded(t)
	for _, path := range []string{"/status", "/zh/status"} {
		res := get(t, h, path)
		for _, external := range []string{"<script", "<img", "<link rel=\"stylesheet\"", "http://", "https://", "@import", "url("} {
			require.NotContains(t, res.Body, external, path)
		}
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'none'")
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	}
}

func TestPagesOfAnEmptyDatabaseSayThereIsNothing(t *testing.T) {
	t.Parallel()
	h := statuspage.Handler(statuspage.Options{DB: migrated.Pool(t)})
	en := get(t, h, "/status")
	require.Equal(t, http.StatusOK, en.Code)
	for _, s := range []string{"No open jobs.", "No server is due.", "No active release.", "No rounds yet.", "No duplicate claims."} {
		require.Contains(t, en.Body, s)
	}
	zh := get(t, h, "/zh/status")
	for _, s := range []string{"没有未结束的任务。", "没有到期的 server。", "没有生效的发布。", "还没有轮次。", "没有重复领取。"} {
		require.Contains(t, zh.Body, s)
	}
}

func TestStatusJSONIsWhatStatusWrites(t *testing.T) {
	t.Parallel()
	h, pool, _ := seeded(t)
	res := get(t, h, "/status.json")
	require.Equal(t, http.StatusOK, res.Code)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))

	r, err := status.Read(context.Background(), pool, &statustest.Now)
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, render.JSON(&want, r))
	require.Equal(t, want.String(), res.Body)

	var shape struct {
		OpenJobs []struct {
			Slug       string  `json:"slug"`
			AgeSeconds float64 `json:"age_seconds"`
			Stale      bool    `json:"stale"`
		} `json:"open_jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &shape))
	require.Equal(t, statustest.Stale, shape.OpenJobs[0].Slug)
	require.Equal(t, 2400.0, shape.OpenJobs[0].AgeSeconds)
	require.True(t, shape.OpenJobs[0].Stale)
}

func TestMetricsParseAsPrometheusText(t *testing.T) {
	t.Parallel()
	h, _, _ := seeded(t)
	res := get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, res.Code)
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", res.Header.Get("Content-Type"))

	samples := parseMetrics(t, res.Body)
	want := map[string]float64{
		"probectl_due_servers":                                         3,
		"probectl_due_servers_with_open_job":                           1,
		"probectl_oldest_due_server_overdue_seconds":                   10800,
		"probectl_open_jobs":                                           3,
		"probectl_stale_jobs":                                          1,
		"probectl_oldest_open_job_age_seconds":                         2400,
		"probectl_rounds_total":                                        3,
		"probectl_last_round_start_timestamp_seconds":                  float64(statustest.Now.Add(-5 * time.Minute).Unix()),
		`probectl_duplicate_pairs_24h{class="after_finish"}`:           1,
		`probectl_duplicate_pairs_24h{class="overlap"}`:                0,
		`probectl_duplicate_pairs_24h{class="open"}`:                   0,
		`probectl_duplicate_pairs_24h{class="explained"}`:              0,
		"probectl_unexplained_duplicate_pairs_24h":                     1,
		`probectl_active_release_info{version="v1.4.0",kind="deploy"}`: 1,
		"probectl_active_release_fanout":                               19,
	}
	for k, v := range want {
		got, ok := samples[k]
		require.True(t, ok, "missing sample %s in\n%s", k, res.Body)
		require.Equal(t, v, got, k)
	}
	require.Contains(t, samples, "probectl_status_read_seconds")
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$`)
)

// parseMetrics checks the text exposition format line by line (HELP and TYPE before a family's
// samples, a known type, valid names, label syntax and float values) and returns the samples by
// name with labels.
func parseMetrics(t *testing.T, text string) map[string]float64 {
	t.Helper()
	require.True(t, strings.HasSuffix(text, "\n"), "ends with a newline")
	typed := map[string]string{}
	helped := map[string]bool{}
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			require.True(t, ok && help != "", "HELP has text: %q", line)
			require.Regexp(t, metricName, name)
			require.False(t, helped[name], "one HELP per family: %q", line)
			helped[name] = true
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(strings.TrimPrefix(line, "# TYPE "))
			require.Len(t, f, 2, line)
			require.Contains(t, []string{"gauge", "counter", "histogram"}, f[1], line)
			require.NotContains(t, typed, f[0], "one TYPE per family")
			typed[f[0]] = f[1]
		default:
			m := sampleLine.FindStringSubmatch(line)
			require.NotNil(t, m, "not a sample line: %q", line)
			family := m[1]
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(m[1], suffix); ok && typed[base] == "histogram" {
					family = base
				}
			}
			require.Contains(t, typed, family, "TYPE comes before the samples of %s", m[1])
			if typed[family] == "counter" {
				require.True(t, strings.HasSuffix(m[1], "_total"), "a counter ends in _total: %s", m[1])
			}
			v, err := strconv.ParseFloat(m[3], 64)
			require.NoError(t, err, line)
			samples[m[1]+m[2]] = v
		}
	}
	require.NoError(t, sc.Err())
	return samples
}

func TestHealthzAnswersWhileTheDatabaseDoes(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	h := statuspage.Handler(statuspage.Options{DB: pool})
	res := get(t, h, "/healthz")
	require.Equal(t, http.StatusOK, res.Code)
	require.Equal(t, "ok\n", res.Body)

	pool.Close()
	res = get(t, h, "/healthz")
	require.Equal(t, http.StatusServiceUnavailable, res.Code)
}

func TestEveryRouteSaysSoWhenTheDatabaseCannotBeRead(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	pool.Close()
	h := statuspage.Handler(statuspage.Options{DB: pool, ReadTimeout: 5 * time.Second})
	cases := []struct{ path, contentType, says string }{
		{"/status", "text/html; charset=utf-8", "The database could not be read."},
		{"/zh/status", "text/html; charset=utf-8", "读不到数据库。"},
		{"/status.json", "application/json", `"error": "could not read the database"`},
		{"/metrics", "text/plain; charset=utf-8", "could not read the database"},
	}
	for _, c := range cases {
		res := get(t, h, c.path)
		require.Equal(t, http.StatusServiceUnavailable, res.Code, c.path)
		require.Equal(t, c.contentType, res.Header.Get("Content-Type"), c.path)
		require.Contains(t, res.Body, c.says, c.path)
	}
}

func TestTheRootSendsEachBrowserToItsLanguage(t *testing.T) {
	t.Parallel()
	h := statuspage.Handler(statuspage.Options{DB: migrated.Pool(t)})
	cases := []struct{ name, acceptLanguage, location string }{
		{"no preference gets English", "", "/status"},
		{"a Chinese browser gets Chinese", "zh-CN,zh;q=0.9,en;q=0.8", "/zh/status"},
		{"English first wins over Chinese", "en-GB,en;q=0.9,zh;q=0.5", "/status"},
		{"a language we lack falls back to English", "fr-FR,fr", "/status"},
		{"Chinese after a language we lack still counts", "ja,zh-TW;q=0.8", "/zh/status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := get(t, h, "/", "Accept-Language", c.acceptLanguage)
			require.Equal(t, http.StatusFound, res.Code)
			require.Equal(t, c.location, res.Header.Get("Location"))
		})
	}
	require.Equal(t, http.StatusNotFound, get(t, h, "/nope").Code)
	req := httptest.NewRequest(http.MethodPost, "/status", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}
