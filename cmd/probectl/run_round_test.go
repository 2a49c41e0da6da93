package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

func TestRunRoundFlagsBecomeTheRoundsSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want probe.Settings
	}{
		{"no flags give the defaults", nil, func() probe.Settings {
			s := settings.Default()
			s.Version = "v1.2.3"
			return s
		}()},
		{"every flag overrides its setting", []string{"--fanout", "3", "--claim-limit", "2", "--concurrency", "1",
			"--min-spacing", "5m", "--max-duration", "1m", "--request-timeout", "3s", "--max-body", "1000",
			"--finish", "advance-first", "--allow-private-targets", "--trigger", "cron", "--contact", "mailto:probes@example.org"},
			probe.Settings{Carried: settings.Carried{Fanout: 3, ClaimLimit: 2, Concurrency: 1,
				MinSpacing: settings.Duration(5 * time.Minute), MaxDuration: settings.Duration(time.Minute),
				RequestTimeout: settings.Duration(3 * time.Second), Finish: "advance-first", Contact: "mailto:probes@example.org"},
				MaxBodyBytes: 1000, AllowPrivateTargets: true, Trigger: "cron", Version: "v1.2.3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			io, _, _, _ := testStreams()
			f := newFactory(io, testEnv(t), buildInfo{Version: "v1.2.3"})
			var got *runRoundOptions
			cmd := newRunRoundCmd(f, func(_ context.Context, o *runRoundOptions) error { got = o; return nil })
			cmd.SetArgs(append([]string{}, tc.args...)) // nil would make cobra read os.Args
			require.NoError(t, cmd.Execute())
			require.Equal(t, tc.want, got.flags())
		})
	}
}

func TestRunRoundRefusesBadSettingsAndMissingKeysBeforeConnecting(t *testing.T) {
	t.Parallel()
	// Nothing listens here: a command that tried to connect would exit 3, not 2.
	const nowhere = "postgres://probe@127.0.0.1:1/probe"
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"a round with no key and no --unsigned", nil, nil, "no signing key: pass --signing-key FILE or set PROBECTL_SIGNING_KEY"},
		{"a lease that does not fit the in-flight window", nil, []string{"--unsigned", "--request-timeout", "90s", "--max-duration", "4m"},
			"lease: 8 requests × --request-timeout 1m30s + --max-duration 4m0s + finish 30s = 16m30s does not fit the 15m0s in-flight window"},
		{"an unknown finish mode", nil, []string{"--unsigned", "--finish", "later"}, `--finish: must be tx or advance-first, got "later"`},
		{"a negative fan-out", nil, []string{"--unsigned", "--fanout", "-1"}, "--fanout: must be 0 or more, got -1"},
		{"--unsigned with a key", nil, []string{"--unsigned", "--signing-key", "k"}, "--unsigned and --signing-key: choose one"},
		{"a key file that does not exist", nil, []string{"--signing-key", "/nonexistent/probe.key"}, "--signing-key: signing key /nonexistent/probe.key"},
		{"a key file from the environment that does not exist", map[string]string{"PROBECTL_SIGNING_KEY": "/nonexistent/k"}, nil,
			"PROBECTL_SIGNING_KEY: signing key /nonexistent/k"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := cli{env: tc.env}.run(t, append([]string{"--database-url", nowhere, "run", "round"}, tc.args...)...)
			assert.Equal(t, 2, res.Code, res.Stderr)
			assert.Contains(t, res.Stderr, tc.want)
			assert.Empty(t, res.Stdout)
		})
	}
}

func TestRunRoundJSONHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 5, "fleet", testfactory.ServerOpts{})

	res := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
		"--fanout", "1", "--claim-limit", "2", "--trigger", "cron", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)

	for _, key := range []string{"round_id", "started_at", "finished_at", "duration_seconds", "invocations", "jobs",
		"runs", "servers", "ok", "failed", "errors", "abandoned", "open_jobs", "runs_unsigned", "counts_unknown", "key_id",
		"stopped_claiming", "interrupted", "advance_misses", "jobs_closed_elsewhere", "fenced", "problems", "settings", "overrides",
		"per_invocation", "failures", "spooled", "spool_file", "recovered", "journal_set_aside", "spool_set_aside", "degraded",
		"finish_batches", "finish_batches_failed", "finish_batch_causes"} {
		assert.Contains(t, got, key)
	}
	assert.Len(t, got, 35, "a new key is a change of the documented shape")
	for key, want := range map[string]any{"invocations": 2.0, "jobs": 4.0, "runs": 4.0, "servers": 4.0, "ok": 4.0,
		"failed": 0.0, "errors": 0.0, "open_jobs": 0.0, "runs_unsigned": 4.0, "key_id": nil, "stopped_claiming": false,
		"interrupted": false, "fenced": 0.0, "counts_unknown": false} {
		assert.Equal(t, want, got[key], key)
	}
	assert.Equal(t, []any{}, got["problems"])
	assert.Equal(t, []any{}, got["failures"])
	assert.Equal(t, []any{}, got["journal_set_aside"])
	assert.Equal(t, []any{}, got["spool_set_aside"])
	_, err := time.Parse(time.RFC3339, got["started_at"].(string))
	assert.NoError(t, err)
	assert.Equal(t, map[string]any{"fanout": 2.0 - 1, "claim_limit": 2.0, "concurrency": 3.0, "min_spacing_seconds": 600.0,
		"max_duration_seconds": 240.0, "request_timeout_seconds": 10.0, "max_body_bytes": 1048576.0, "finish": "tx",
		"allow_private_targets": true, "in_flight_seconds": 900.0, "trigger": "cron", "version": "dev", "release_id": nil,
		"contact": "https://github.com/probectl/probectl"},
		got["settings"])
	assert.Equal(t, []any{map[string]any{"invocation": 0.0, "claimed": 2.0, "done": 2.0},
		map[string]any{"invocation": 1.0, "claimed": 2.0, "done": 2.0}}, got["per_invocation"])
	assert.Empty(t, res.Stderr, "no progress when stderr is not a terminal")
}

func TestAnInterruptedRoundPrintsItsSummaryAndExits3(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Ctrl-C arrives while the check's request is in flight.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{Slug: "slow", URL: srv.URL + "/slow",
		NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})

	res := cli{ctx: ctx}.run(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
		"--fanout", "0", "--claim-limit", "1", "-o", "json")
	require.Equal(t, 3, res.Code, "an interrupted round did not do all its work: %s", res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, true, got["interrupted"])
	for key, want := range map[string]any{"jobs": 1.0, "runs": 1.0, "errors": 1.0, "open_jobs": 0.0} {
		assert.Equal(t, want, got[key], key)
	}
	assert.Equal(t, []any{"the round was interrupted (context canceled): it claimed no more, and 1 check(s) it stopped " +
		"midway were stored as interrupted by probectl, not as failures of the servers"}, got["problems"])
	assert.Contains(t, res.Stderr, "probectl: round interrupted (context canceled): 1 problem(s)")
	jobs, err := queries.ListRoundJobs(t.Context(), pool, int64(got["round_id"].(float64)))
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.NotNil(t, jobs[0].Error)
	assert.True(t, strings.HasPrefix(*jobs[0].Error, "check interrupted by probectl (context canceled), not failed by the server: "),
		*jobs[0].Error)
}

func TestRunRoundSignsEveryRunWithTheKeyFromTheEnvironment(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 3, "fleet", testfactory.ServerOpts{})
	key := filepath.Join(t.TempDir(), "probe.key")
	require.Equal(t, 0, runCLI(t, "--database-url", url, "keys", "generate", "--out", key).Code)
	signer, err := attest.LoadSigner(key)
	require.NoError(t, err)

	res := cli{env: map[string]string{"PROBECTL_SIGNING_KEY": key}}.run(t, "--database-url", url, "run", "round",
		"--allow-private-targets", "--fanout", "0")
	require.Equal(t, 0, res.Code, res.Stderr)
	out := lines(res.Stdout)
	require.Len(t, out, 3, res.Stdout)
	assert.Equal(t, strings.Fields("ROUND INVOCATIONS JOBS RUNS SERVERS OK FAILED ERRORS OPEN JOBS DURATION"), strings.Fields(out[0]))
	assert.Equal(t, []string{"1", "1", "3", "3", "3", "3", "0", "0", "0"}, strings.Fields(out[1])[:9])
	assert.Equal(t, "manual round, version dev: fan-out 0, claim limit 5, concurrency 3, min spacing 10m, finish tx, signed with "+
		signer.KeyID(), out[2])

	jobs, err := queries.ListRoundJobs(t.Context(), pool, 1)
	require.NoError(t, err)
	keys := testfactory.SigningKeys(t.Context(), t, pool)
	require.Len(t, jobs, 3)
	for _, j := range jobs {
		st, err := attest.Verify(j.Envelope, keys)
		require.NoError(t, err)
		require.NoError(t, st.CheckJob(j.JobID))
		require.NoError(t, st.CheckSubject(j.Slug, j.URL))
	}
}

func TestRunRoundRefusesAKeyThatIsNotRegistered(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 1, "fleet", testfactory.ServerOpts{})
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	key := filepath.Join(t.TempDir(), "stray.key")
	require.NoError(t, attest.WritePrivateKey(key, priv))

	res := runCLI(t, "--database-url", url, "run", "round", "--signing-key", key, "--allow-private-targets")
	assert.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "is not registered in signing_keys")
	counts, err := queries.CountRound(t.Context(), pool, 1)
	require.NoError(t, err)
	assert.Zero(t, counts.Jobs)
}

// runAt runs probectl with the time fixed at now, both the one flags are read from and the one
// reports are read as of (the dry run prints times).
func runAt(t *testing.T, now time.Time, args ...string) cliResult {
	t.Helper()
	return runWith(t, func(f *factory) { f.Clock = func() time.Time { return now } }, args...)
}

// runWith runs probectl with a factory that setup changed first. Errors map to exit codes as
// Execute maps them.
func runWith(t *testing.T, setup func(*factory), args ...string) cliResult {
	t.Helper()
	io, _, out, errOut := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	setup(f)
	defer f.Close()
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		err = sayInputs(classifyCobraError(err))
		var silent *silentError
		if !errors.As(err, &silent) {
			fmt.Fprintf(errOut, "probectl: %s\n", err)
		}
	}
	return cliResult{Stdout: out.String(), Stderr: errOut.String(), Code: exit.Code(err)}
}

func TestRunRoundDryRunExplainsEachDueServerAndClaimsNothing(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := t.Context()
	now := time.Date(2026, 10, 7, 20, 55, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { return testfactory.Ptr(now.Add(d)) }
	server := func(slug string, o testfactory.ServerOpts) int64 {
		o.Slug, o.URL = slug, "https://"+slug+".example/"
		return testfactory.Server(ctx, t, pool, &o)
	}
	server("alpha-due", testfactory.ServerOpts{NextCheckAt: at(-2 * time.Hour)})
	open := server("bravo-open", testfactory.ServerOpts{NextCheckAt: at(-90 * time.Minute)})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: open, RequestedAt: at(-5 * time.Minute)})
	spaced := server("charlie-spacing", testfactory.ServerOpts{NextCheckAt: at(-80 * time.Minute)})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: spaced, RequestedAt: at(-4 * time.Minute), FinishedAt: at(-3 * time.Minute)})
	server("delta-paused", testfactory.ServerOpts{NextCheckAt: at(-70 * time.Minute), Status: "paused"})
	claimed := server("echo-maintainer", testfactory.ServerOpts{NextCheckAt: at(-time.Minute), MaintainerClaimedAt: at(-time.Minute)})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: claimed, RequestedAt: at(-4 * time.Minute), FinishedAt: at(-3 * time.Minute)})
	server("foxtrot-later", testfactory.ServerOpts{NextCheckAt: at(time.Hour)})

	for _, format := range []string{"table", "json"} {
		res := runAt(t, now, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0", "--claim-limit", "1", "-o", format)
		require.Equal(t, 0, res.Code, res.Stderr)
		golden.Require(t, "testdata/run_round_dry_run."+format, []byte(res.Stdout))
	}
	counts, err := queries.CountRound(ctx, pool, 1)
	require.NoError(t, err)
	assert.Zero(t, counts.Jobs, "a dry run claims nothing")
}

func TestRunRoundDryRunReadsAsOfTheDatabasesClockUnlessATestFixesOne(t *testing.T) {
	t.Parallel()
	// With no clock fixed, reports are read as of the database's clock: the factory passes none.
	f := newFactory(nil, testEnv(t), buildInfo{})
	assert.Nil(t, f.readAt(), "no clock fixed: the database's clock decides")

	url, pool := migratedDB(t)
	testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	before := time.Now()
	res := runCLI(t, "--database-url", url, "run", "round", "--dry-run", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var plan struct {
		Now        time.Time `json:"now"`
		WouldClaim int       `json:"would_claim"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &plan), res.Stdout)
	assert.Equal(t, 1, plan.WouldClaim, "the server due an hour ago by the database's clock")
	assert.WithinDuration(t, before, plan.Now, time.Minute, "the plan is dated by the database's clock")

	// A fixed clock dates both: years back, nothing is due yet.
	behind := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	res = runAt(t, behind, "--database-url", url, "run", "round", "--dry-run", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &plan), res.Stdout)
	assert.Zero(t, plan.WouldClaim)
	assert.Equal(t, behind, plan.Now.UTC())
}

func TestRunRoundShowsProgressOnlyWhenStderrIsATerminal(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 2, "fleet", testfactory.ServerOpts{})
	io, _, out, errOut := testStreams()
	io.ErrTTY = true
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	defer f.Close()
	root := newRootCmd(f)
	root.SetArgs([]string{"--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
		"--fanout", "0", "--concurrency", "1", "-o", "json"})
	require.NoError(t, root.ExecuteContext(t.Context()))
	// One display, redrawn in place; its last drawing has the round's final counts.
	assert.Regexp(t, `claimed 2, in flight 0, done 2, failed 0, \S+s elapsed`, errOut.String(), "%q", errOut.String())
	assert.NotContains(t, errOut.String(), "invocation  0:", "no scrolling line per event")
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "stdout stays clean JSON")

	// --quiet: nothing on stderr but what went wrong (a fleet of its own: the first is not due).
	url, pool = migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 2, "fleet", testfactory.ServerOpts{})
	io, _, _, errOut = testStreams()
	io.ErrTTY = true
	f2 := newFactory(io, func(string) string { return "" }, buildInfo{Version: "test"})
	defer f2.Close()
	root = newRootCmd(f2)
	root.SetArgs([]string{"--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
		"--fanout", "0", "--concurrency", "1", "--quiet", "-o", "json"})
	require.NoError(t, root.ExecuteContext(t.Context()))
	assert.NotContains(t, errOut.String(), "claimed")
}
