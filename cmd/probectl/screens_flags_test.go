package main

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// --round 0 is not "every round": it is refused, naming the flag, before connecting.
func TestRunsListRefusesRoundZero(t *testing.T) {
	t.Parallel()
	down := "postgres://probectl@127.0.0.1:1/none?connect_timeout=1"
	for _, round := range []string{"0", "-1"} {
		res := runCLI(t, "--database-url", down, "runs", "list", "--round", round)
		assert.Equal(t, 2, res.Code, res.Stderr)
		assert.Contains(t, res.Stderr, "--round")
		assert.Contains(t, res.Stderr, "leave --round out")
		assert.Empty(t, res.Stdout)
	}
}

// runs list, runs show and servers show follow --tz like every other table; JSON stays UTC.
func TestRunsAndServersShowTimesInTheChosenZone(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	id := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "zoned", Kind: "http"})
	started := time.Date(2026, 10, 7, 20, 53, 0, 0, time.UTC)
	finished := started.Add(time.Second)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: id, RequestedAt: &started, FinishedAt: &finished, Outcome: "ok"})
	run := testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: id, StartedAt: &started, FinishedAt: &finished,
		Result: []byte(`{"outcome":"ok","summary":"HTTP 200","requests":[{"method":"GET","url":"https://zoned.example/","status":200,
			"latency_seconds":0.1,"tls":{"version":"TLS 1.3","cert_not_after":"2026-12-31T20:00:00Z"}}]}`)})

	for name, args := range map[string][]string{
		"runs list":    {"runs", "list"},
		"runs show":    {"runs", "show", strconv.FormatInt(run, 10)},
		"servers show": {"servers", "show", "zoned"},
	} {
		res := runCLI(t, append([]string{"--database-url", url, "--tz", "Asia/Shanghai"}, args...)...)
		require.Equal(t, 0, res.Code, "%s: %s", name, res.Stderr)
		assert.Contains(t, res.Stdout, "2026-10-08T04:53:00", "%s: 20:53 UTC is 04:53 the next day in Shanghai", name)
		assert.NotContains(t, res.Stdout, "2026-10-07T20:53:00Z", name)
	}
	list := runCLI(t, "--database-url", url, "--tz", "Asia/Shanghai", "runs", "list")
	assert.Contains(t, list.Stdout, "STARTED (Asia/Shanghai)")
	show := runCLI(t, "--database-url", url, "--tz", "Asia/Shanghai", "runs", "show", strconv.FormatInt(run, 10))
	assert.Contains(t, show.Stdout, "cert until 2027-01-01", "the certificate's day in Shanghai")
	js := runCLI(t, "--database-url", url, "--tz", "Asia/Shanghai", "runs", "list", "-o", "json")
	assert.Contains(t, js.Stdout, "2026-10-07T20:53:00Z")
}

// A token in an endpoint's URL (its query, its user info) is never printed: servers list, show, add
// and recheck redact it in tables and JSON alike, as runs show does.
func TestServersNeverPrintAnEndpointsSecret(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "tokened", Kind: "http",
		URL: "https://alice:hunter2@tokened.example/mcp?api_key=s3cr3t&x=1"})
	added := runCLI(t, "--database-url", url, "servers", "add", "--slug", "second", "--url",
		"https://second.example/?token=t0ps3cr3t", "--kind", "http", "-o", "json")
	require.Equal(t, 0, added.Code, added.Stderr)

	outputs := map[string]string{"servers add -o json": added.Stdout}
	for name, args := range map[string][]string{
		"servers list":         {"servers", "list"},
		"servers list -o json": {"servers", "list", "-o", "json"},
		"servers show":         {"servers", "show", "tokened"},
		"servers show -o json": {"servers", "show", "tokened", "-o", "json"},
	} {
		res := runCLI(t, append([]string{"--database-url", url}, args...)...)
		require.Equal(t, 0, res.Code, "%s: %s", name, res.Stderr)
		outputs[name] = res.Stdout
	}
	for name, out := range outputs {
		for _, secret := range []string{"hunter2", "s3cr3t", "t0ps3cr3t", "alice"} {
			assert.NotContains(t, out, secret, "%s prints a secret", name)
		}
	}
	assert.Contains(t, outputs["servers list"], "https://tokened.example/mcp?")
	var shown struct {
		Server struct {
			URL string `json:"url"`
		} `json:"server"`
	}
	require.NoError(t, json.Unmarshal([]byte(outputs["servers show -o json"]), &shown))
	assert.Contains(t, shown.Server.URL, "https://tokened.example/mcp?api_key=")
}
