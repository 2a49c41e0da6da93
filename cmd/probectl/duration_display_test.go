package main

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// otherDurationGrammars match the ways durations were written before render.Duration was the one:
// Go's ("12h0m0s", "10m0s", "1m30.5s"), seconds with a space ("0.080 s"), two spaced units
// ("3m 52s"), one forced decimal ("2.0s").
var otherDurationGrammars = regexp.MustCompile(`\d+h\d+m\d+s|\d+m0s|\d+m\d+\.\d+s|\d\.\d+ s\b|\d+[dhm] \d+[hms]\b|\b\d+\.0s\b`)

// Every table and text output writes a duration one way (render.Duration), the way the duration
// flags read them: status, servers show, runs list, runs show, deploy list and check.
func TestEveryOutputWritesDurationsOneWay(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	statustest.Seed(ctx, t, pool)
	id := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "timed", Kind: "http", CheckInterval: 12 * time.Hour})
	started := time.Now().Add(-time.Hour)
	finished := started.Add(80 * time.Millisecond)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: id, RequestedAt: &started, FinishedAt: &finished, Outcome: "ok"})
	run := testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: id, StartedAt: &started, FinishedAt: &finished,
		Result: []byte(`{"outcome":"ok","summary":"HTTP 200","requests":[{"method":"GET","url":"https://timed.example/","status":200,"latency_seconds":0.08}]}`)})

	status, _, err := statusAt(t, url)
	require.NoError(t, err)
	outputs := map[string]string{"status": status}
	for name, args := range map[string][]string{
		"servers show":  {"servers", "show", "timed"},
		"runs list":     {"runs", "list"},
		"runs show":     {"runs", "show", strconv.FormatInt(run, 10)},
		"deploy list":   {"deploy", "list"},
		"alerts policy": {"alerts", "policy"},
	} {
		res := runCLI(t, append([]string{"--database-url", url}, args...)...)
		require.Equal(t, 0, res.Code, "%s: %s", name, res.Stderr)
		outputs[name] = res.Stdout
	}
	srv, _ := counted(t, sdkServer())
	outputs["check"] = runCLI(t, "check", srv.URL+"/mcp", "--allow-private-targets").Stdout

	for name, out := range outputs {
		assert.Empty(t, otherDurationGrammars.FindAllString(out, -1), "%s writes a duration another way:\n%s", name, out)
	}
	assert.Contains(t, outputs["servers show"], "every 12h)")
	assert.Contains(t, outputs["runs show"], "0.08s")
	assert.Contains(t, outputs["status"], "4m12s")
	assert.Contains(t, outputs["deploy list"], "10m")
	assert.Regexp(t, `resend_every\s+1m\n`, outputs["alerts policy"])
}

// migrate's table says how long each migration took as every table says a duration, not as a bare
// number of seconds.
func TestMigrateSaysHowLongAMigrationTookAsEveryTableDoes(t *testing.T) {
	t.Parallel()
	io, _, out, _ := testStreams()
	applied := []queries.Migration{{Version: 1, Name: "00001_init.sql", Duration: 0.0123}, {Version: 2, Name: "00002_runs.sql", Duration: 75.5}}
	require.NoError(t, writeMigrated(io, applied, nil))
	assert.Equal(t, "VERSION  MIGRATION       DURATION\n"+
		"1        00001_init.sql  0.012s\n"+
		"2        00002_runs.sql  1m15s\n"+
		"applied 2 migration(s)\n", out.String())
}
