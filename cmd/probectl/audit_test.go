package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/testfactory"
)

// The incident's evening, as the write-up tells it: the fan-out went live at 20:53, its rounds at
// 20:55 and 21:00 each checked two servers twice a fraction of a second after the first check
// finished, and the fix went live at 22:13:24.
var (
	auditSince      = time.Date(2026, 9, 30, 20, 53, 0, 0, time.UTC)
	auditFanoutLive = time.Date(2026, 10, 7, 20, 53, 0, 0, time.UTC)
	auditFixLive    = time.Date(2026, 10, 7, 22, 13, 24, 0, time.UTC)
	auditUntil      = time.Date(2026, 10, 8, 13, 15, 31, 0, time.UTC)
)

func incidentAt(hh, mm, ss, ms int) time.Time {
	return time.Date(2026, 10, 7, hh, mm, ss, ms*int(time.Millisecond), time.UTC)
}

// plantAuditIncident writes the evening's jobs, and an explicit re-check after the fix.
func plantAuditIncident(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	server := func(slug string) int64 {
		return testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug})
	}
	job := func(s int64, requested, finished time.Time, reason string) {
		id := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: s, RequestedAt: &requested, FinishedAt: &finished, Reason: reason})
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: id, ServerID: s, StartedAt: &requested, FinishedAt: &finished, Requests: 2})
	}
	weather, status, maps, news := server("weather"), server("status-page"), server("maps"), server("news")
	claimed, calm := server("claimed"), server("calm")
	for i, s := range []int64{weather, status, maps, news, claimed, calm} {
		start := time.Date(2026, 10, 5, 8, i, 0, 0, time.UTC)
		job(s, start, start.Add(2*time.Second), "")
	}
	job(weather, incidentAt(20, 55, 1, 0), incidentAt(20, 55, 44, 0), "")
	job(weather, incidentAt(20, 55, 44, 168), incidentAt(20, 55, 46, 0), "")
	job(status, incidentAt(20, 55, 2, 0), incidentAt(20, 55, 40, 0), "")
	job(status, incidentAt(20, 55, 40, 236), incidentAt(20, 55, 42, 0), "")
	job(maps, incidentAt(21, 0, 3, 0), incidentAt(21, 0, 30, 0), "")
	job(maps, incidentAt(21, 0, 30, 118), incidentAt(21, 0, 32, 0), "")
	job(news, incidentAt(21, 0, 4, 0), incidentAt(21, 0, 41, 0), "")
	job(news, incidentAt(21, 0, 41, 112), incidentAt(21, 0, 43, 0), "")

	job(claimed, incidentAt(23, 0, 0, 0), incidentAt(23, 0, 2, 0), "")
	job(claimed, incidentAt(23, 3, 0, 0), incidentAt(23, 3, 2, 0), "maintainer_claim")
	job(calm, time.Date(2026, 10, 8, 8, 0, 0, 0, time.UTC), time.Date(2026, 10, 8, 8, 0, 2, 0, time.UTC), "")
}

func auditIncidentArgs(url string) []string {
	return []string{"--database-url", url, "audit", "duplicates",
		"--since", auditSince.Format(time.RFC3339), "--until", auditUntil.Format(time.RFC3339),
		"--split-at", auditFanoutLive.Format(time.RFC3339), "--split-at", auditFixLive.Format(time.RFC3339)}
}

func TestAuditDuplicatesReportsTheIncidentInEveryFormat(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	plantAuditIncident(t, pool)
	for _, format := range []string{"table", "json", "csv"} {
		t.Run(format, func(t *testing.T) {
			res := runCLI(t, append(auditIncidentArgs(url), "-o", format)...)
			require.Equal(t, 0, res.Code, res.Stderr)
			require.Empty(t, res.Stderr)
			golden.Require(t, "testdata/audit_duplicates."+format, []byte(res.Stdout))
		})
	}
}

func TestAuditDuplicatesJSONHasTheDocumentedKeys(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	plantAuditIncident(t, pool)
	res := runCLI(t, append(auditIncidentArgs(url), "-o", "json")...)
	require.Equal(t, 0, res.Code, res.Stderr)

	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	requireJSONKeys(t, got, "population", "window_seconds", "duplicate_count", "unexplained_count", "class_counts",
		"closest_gap_seconds", "closest_pair", "duplicates", "periods")
	require.JSONEq(t, `600.000`, string(got["window_seconds"]))
	require.JSONEq(t, `5`, string(got["duplicate_count"]))
	require.JSONEq(t, `4`, string(got["unexplained_count"]))
	require.JSONEq(t, `27.118`, string(got["closest_gap_seconds"]))

	var population map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got["population"], &population))
	requireJSONKeys(t, population, "jobs", "servers", "since", "until")
	require.JSONEq(t, `"2026-09-30T20:53:00Z"`, string(population["since"]))

	var pairs []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got["duplicates"], &pairs))
	require.Len(t, pairs, 5)
	requireJSONKeys(t, pairs[0], "server_id", "slug", "first_job_id", "second_job_id", "first_requested_at",
		"first_finished_at", "second_requested_at", "request_gap_seconds", "gap_after_finish_seconds",
		"second_reason", "class", "explained", "first_before_since")
	require.JSONEq(t, `"status-page"`, string(pairs[0]["slug"]), "pairs come in the order the second jobs were requested")
	require.JSONEq(t, `0.236`, string(pairs[0]["gap_after_finish_seconds"]), "millisecond precision")
	require.JSONEq(t, `"2026-10-07T20:55:40.236Z"`, string(pairs[0]["second_requested_at"]))
	require.JSONEq(t, `"after_finish"`, string(pairs[0]["class"]))
	require.JSONEq(t, `"explained"`, string(pairs[4]["class"]))

	var periods []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got["periods"], &periods))
	require.Len(t, periods, 3)
	requireJSONKeys(t, periods[1], "since", "until", "jobs", "servers", "pairs", "unexplained")
	require.JSONEq(t, `8`, string(periods[1]["jobs"]))
	require.JSONEq(t, `4`, string(periods[1]["servers"]))
	require.JSONEq(t, `4`, string(periods[1]["unexplained"]))
}

func requireJSONKeys(t *testing.T, obj map[string]json.RawMessage, keys ...string) {
	t.Helper()
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(keys)
	require.Equal(t, keys, got)
}

func TestAuditDuplicatesFailOnFoundExits1AfterPrintingTheReport(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	plantAuditIncident(t, pool)

	res := runCLI(t, append(auditIncidentArgs(url), "--fail-on-found")...)
	require.Equal(t, 1, res.Code)
	require.Contains(t, res.Stdout, "duplicates  5 (4 unexplained")
	require.Empty(t, res.Stderr, "the report is the explanation; nothing more is printed")

	after := []string{"--database-url", url, "audit", "duplicates", "--fail-on-found",
		"--since", auditFixLive.Format(time.RFC3339), "--until", auditUntil.Format(time.RFC3339)}
	res = runCLI(t, after...)
	require.Equal(t, 0, res.Code, "after the fix only an explained re-check remains: %s", res.Stdout)
	require.Contains(t, res.Stdout, "duplicates  1 (0 unexplained")
}

func TestAuditBadInputExits2NamingTheFlag(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an unreadable --since", []string{"audit", "duplicates", "--since", "yesterday"}, `--since: "yesterday" is neither an RFC 3339 time`},
		{"a --until without an offset", []string{"audit", "duplicates", "--until", "2026-10-08T13:15:31"}, `--until: "2026-10-08T13:15:31" is not an RFC 3339 time`},
		{"--since after --until", []string{"audit", "duplicates", "--since", "2026-10-08T00:00:00Z", "--until", "2026-10-07T00:00:00Z"}, "--since 2026-10-08T00:00:00Z is not before --until 2026-10-07T00:00:00Z"},
		{"a zero --window", []string{"audit", "duplicates", "--window", "0s"}, `--window: must be positive, got 0s`},
		{"a negative --window", []string{"audit", "duplicates", "--window", "-10m"}, `--window: duration "-10m" is negative`},
		{"an unreadable --window", []string{"audit", "duplicates", "--window", "ten"}, `--window: duration "ten": invalid duration`},
		{"an unreadable --split-at", []string{"audit", "duplicates", "--split-at", "noon"}, `--split-at: "noon" is neither`},
		{"a --split-at outside the population", []string{"--database-url", url, "audit", "duplicates", "--since", "2026-10-07T00:00:00Z",
			"--until", "2026-10-08T00:00:00Z", "--split-at", "2026-10-09T00:00:00Z"}, "--split-at: 2026-10-09T00:00:00Z is not strictly between"},
		{"an output audits do not have", []string{"audit", "duplicates", "-o", "yaml"}, `--output "yaml"`},
		{"a rate --since that cannot be read", []string{"audit", "rate", "--since", "last week"}, `--since: "last week" is neither`},
		{"a zero --in-flight", []string{"audit", "open", "--in-flight", "0m"}, `--in-flight: must be positive`},
		{"an --in-flight in weeks is read, and refused when zero", []string{"audit", "open", "--in-flight", "0w"}, `--in-flight: must be positive, got 0s`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, tc.args...)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Empty(t, res.Stdout)
		})
	}
}

func TestAuditRateListsTheServersOverThePromise(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	plantAuditIncident(t, pool)
	args := []string{"--database-url", url, "audit", "rate",
		"--since", auditFanoutLive.Format(time.RFC3339), "--until", auditUntil.Format(time.RFC3339)}

	res := runCLI(t, args...)
	require.Equal(t, 0, res.Code, res.Stderr)
	golden.Require(t, "testdata/audit_rate.table", []byte(res.Stdout))

	res = runCLI(t, append(args, "--fail-on-found", "-o", "json")...)
	require.Equal(t, 1, res.Code)
	var got struct {
		OverCount int `json:"over_count"`
		Over      []struct {
			Slug      string  `json:"slug"`
			ShortGaps int     `json:"short_gaps"`
			Closest   float64 `json:"closest_gap_seconds"`
		} `json:"over"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Equal(t, 4, got.OverCount, "the four servers checked twice; the maintainer's re-check is theirs")
	require.Equal(t, "weather", got.Over[0].Slug)
	require.Equal(t, 43.168, got.Over[0].Closest)
}

func TestAuditOpenFlagsStaleJobs(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	stuck := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "stuck"})
	busy := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "busy"})
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{Trigger: "cron", Version: "v1.4.0"})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: stuck, RoundID: &round,
		RequestedAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: busy, RoundID: &round})

	res := runCLI(t, "--database-url", url, "audit", "open")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Regexp(t, `^open jobs   2, as of \S+\nstale       1 \(open for 15m or more\)\n`, res.Stdout)
	require.Regexp(t, `\n1 +stuck +1 \(cron, v1.4.0\) +- +scheduled +\S+ +1h +stale\n`, res.Stdout)
	require.Regexp(t, `\n2 +busy +.* +open\n`, res.Stdout, "a job not yet stale is open, the word status uses")

	res = runCLI(t, "--database-url", url, "audit", "open", "-o", "json", "--fail-on-found")
	require.Equal(t, 1, res.Code, res.Stderr)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	requireJSONKeys(t, got, "now", "in_flight_seconds", "open_count", "stale_count", "jobs")
	require.JSONEq(t, `900.000`, string(got["in_flight_seconds"]))
	require.JSONEq(t, `1`, string(got["stale_count"]))
	var jobs []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got["jobs"], &jobs))
	requireJSONKeys(t, jobs[0], "job_id", "server_id", "slug", "round_id", "round_trigger", "round_version",
		"invocation", "reason", "requested_at", "age_seconds", "stale")
	require.JSONEq(t, `true`, string(jobs[0]["stale"]))
	require.JSONEq(t, `false`, string(jobs[1]["stale"]))
}
