package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/user"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// deployAt is when the incident's parallel version went live.
var deployAt = time.Date(2026, 10, 7, 20, 53, 0, 0, time.UTC)

var (
	sequentialSettings = release.Settings{Fanout: 0, ClaimLimit: 25, Concurrency: 1, MinSpacing: settings.Duration(10 * time.Minute),
		RequestTimeout: settings.Duration(10 * time.Second), MaxDuration: settings.Duration(4 * time.Minute), Finish: "tx"}
	parallelSettings = release.Settings{Fanout: 19, ClaimLimit: 5, Concurrency: 3, MinSpacing: settings.Duration(10 * time.Minute),
		RequestTimeout: settings.Duration(10 * time.Second), MaxDuration: settings.Duration(4 * time.Minute), Finish: "tx"}
)

// recordAt records a release at a fixed time, so that output is stable.
func recordAt(t *testing.T, pool *pgxpool.Pool, at time.Time, version string, s release.Settings, ways ...release.Way) release.Release {
	t.Helper()
	rec, err := release.Record(context.Background(), pool, release.RecordRequest{Version: version, Settings: s,
		WaysBack: ways, Actor: "ana", Note: "deploy " + version, Now: &at})
	require.NoError(t, err)
	return rec.Release
}

// incident plants v1 and v2 as on the day, v2 approving both ways back.
func incident(t *testing.T, pool *pgxpool.Pool) (v1, v2 release.Release) {
	t.Helper()
	v1 = recordAt(t, pool, deployAt.Add(-7*24*time.Hour), "v1", sequentialSettings, release.WayPrevious)
	v2 = recordAt(t, pool, deployAt, "v2", parallelSettings, release.WayPrevious, release.WayFanoutOff)
	return v1, v2
}

// fleet plants n servers named srv-0…, a registered key, and a signer for their runs.
type fleet struct {
	t       *testing.T
	pool    *pgxpool.Pool
	signer  *attest.Signer
	servers []int64
}

func newFleet(t *testing.T, pool *pgxpool.Pool, n int) *fleet {
	t.Helper()
	ctx := context.Background()
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	fl := &fleet{t: t, pool: pool, signer: attest.NewSigner(priv)}
	require.NoError(t, queries.RegisterSigningKey(ctx, pool, fl.signer.KeyID(), fl.signer.PublicKey()))
	later := deployAt.Add(24 * time.Hour)
	for i := range n {
		fl.servers = append(fl.servers, testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{
			Slug: fmt.Sprintf("srv-%d", i), URL: fmt.Sprintf("https://srv-%d.example/mcp", i), Kind: "mcp", NextCheckAt: &later}))
	}
	return fl
}

// round plants a finished round under rel at start, one signed job per server index, each job
// 100 ms after the previous one finished (gap, when non-zero, instead), each taking a second.
func (fl *fleet) round(rel release.Release, start time.Time, servers []int, gaps map[int]time.Duration) {
	t, ctx := fl.t, context.Background()
	end := start.Add(time.Minute)
	roundID := testfactory.Round(ctx, t, fl.pool, &testfactory.RoundOpts{ReleaseID: &rel.ID, Version: rel.Version,
		StartedAt: &start, FinishedAt: &end, Fanout: rel.Fanout, ClaimLimit: rel.ClaimLimit, Concurrency: rel.Concurrency})
	next := start
	for i, s := range servers {
		gap := 100 * time.Millisecond
		if g, ok := gaps[i]; ok {
			gap = g
		}
		requested := next.Add(gap)
		done := requested.Add(time.Second)
		next = done
		jobID := testfactory.Job(ctx, t, fl.pool, &testfactory.JobOpts{ServerID: fl.servers[s], RoundID: &roundID,
			Invocation: testfactory.Ptr(0), RequestedAt: &requested, FinishedAt: &done})
		env, err := fl.signer.Sign(attest.Run{JobID: jobID, ServerID: fl.servers[s], Slug: fmt.Sprintf("srv-%d", s),
			URL: fmt.Sprintf("https://srv-%d.example/mcp", s), Kind: "mcp", RoundID: roundID,
			Result: check.Result{Outcome: "ok", Requests: []check.Request{}, StartedAt: requested, FinishedAt: done}})
		require.NoError(t, err)
		testfactory.Run(ctx, t, fl.pool, &testfactory.RunOpts{JobID: jobID, ServerID: fl.servers[s],
			StartedAt: &requested, FinishedAt: &done, Envelope: env})
	}
}

func withDB(url string) cli {
	return cli{env: map[string]string{"PROBECTL_DATABASE_URL": url, "USER": "ana"}}
}

func TestDeployRecordMakesTheReleaseActive(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	c := withDB(url)

	res := c.run(t, "deploy", "record", "--fanout", "19", "--claim-limit", "5", "--concurrency", "3",
		"--ways-back", "fanout-off,previous", "--note", "parallel rounds")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "recorded release #1 (dev), deployed by ana, and made it active; it is the first release\n")

	res = c.run(t, "deploy", "record", "--version", "v2", "--actor", "bo", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Release  map[string]any `json:"release"`
		Replaced map[string]any `json:"replaced"`
		Event    map[string]any `json:"event"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Equal(t, "v2", got.Release["version"])
	require.Equal(t, "bo", got.Release["deployed_by"])
	require.Equal(t, float64(1), got.Release["previous_id"])
	require.Equal(t, "dev", got.Replaced["version"])
	require.Equal(t, []any{"previous", "fanout-off"}, got.Replaced["ways_back"])
	require.Equal(t, "deploy", got.Event["action"])

	active, err := queries.ActiveRelease(context.Background(), pool)
	require.NoError(t, err)
	require.Equal(t, "v2", active.Version)
}

func TestDeployRecordRefusesBadFlagsWithoutConnecting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a negative fan-out", []string{"--fanout", "-1"}, "--fanout: must be 0 or more"},
		{"an unknown way back", []string{"--ways-back", "previous,patch"}, `--ways-back: unknown way back "patch"`},
		{"an unknown finish mode", []string{"--finish", "later"}, "--finish: must be tx or advance-first"},
		{"settings that fail the lease check", []string{"--request-timeout", "1m", "--max-duration", "10m"},
			"lease: 8 requests × --request-timeout 1m0s + --max-duration 10m0s + finish 30s = 18m30s does not fit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No database is configured: reaching it would exit 3, not 2.
			res := cli{env: map[string]string{"USER": "ana"}}.run(t, append([]string{"deploy", "record"}, tc.args...)...)
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Empty(t, res.Stdout)
		})
	}
}

func TestTheActorIsTheFlagElseUserElseTheOSUser(t *testing.T) {
	t.Parallel()
	f := newFactory(nil, func(k string) string { return map[string]string{"USER": "ana"}[k] }, buildInfo{})
	require.Equal(t, "bot", actorFrom(f, "bot"))
	require.Equal(t, "ana", actorFrom(f, ""))
	me, err := user.Current()
	require.NoError(t, err)
	f.Getenv = func(string) string { return "" }
	require.Equal(t, me.Username, actorFrom(f, ""), "cron jobs and containers often have no $USER")
}

func TestDeployListShowsWhoDeployedAndRolledBackWhenAndWhy(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	incident(t, pool)
	back := deployAt.Add(7*time.Minute + 52*time.Second)
	_, err := release.Rollback(context.Background(), pool, release.RollbackRequest{Way: release.WayFanoutOff,
		Actor: "bo", Reason: "duplicate claims in the 20:55 round", Now: &back})
	require.NoError(t, err)

	res := withDB(url).run(t, "deploy", "list")
	require.Equal(t, 0, res.Code, res.Stderr)
	golden.Require(t, "testdata/deploy_list.golden", []byte(res.Stdout))

	res = withDB(url).run(t, "deploy", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Releases []map[string]any `json:"releases"`
		Events   []map[string]any `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Len(t, got.Releases, 3)
	require.ElementsMatch(t, []string{"id", "version", "kind", "active", "fanout", "claim_limit", "concurrency",
		"min_spacing_seconds", "request_timeout_seconds", "max_duration_seconds", "finish", "contact", "ways_back", "note",
		"deployed_at", "deployed_by", "previous_id", "derived_from", "rolled_back_at", "rolled_back_by",
		"rollback_reason"}, keysOf(got.Releases[0]))
	require.Equal(t, "2026-10-07T21:00:52Z", got.Releases[1]["rolled_back_at"])
	require.Equal(t, float64(600), got.Releases[0]["min_spacing_seconds"])
	require.ElementsMatch(t, []string{"id", "at", "action", "release_id", "from_release_id", "forced", "actor", "reason"},
		keysOf(got.Events[0]))
	require.Equal(t, "fanout-off", got.Events[0]["action"])
}

func TestDeployListWithNoReleaseSaysHowToRecordOne(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := withDB(url).run(t, "deploy", "list")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "no release recorded yet; record one with `probectl deploy record`\n", res.Stdout)
}

// deploy record --help names --every's value as a duration, not as "probectl worker" (pflag takes
// a back-quoted word of a flag's usage for its value's name).
func TestDeployRecordHelpNamesEverysValueAsADuration(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "deploy", "record", "--help")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Regexp(t, `--every duration +start a round this often under 'probectl worker'`, res.Stdout)
	require.NotContains(t, res.Stdout, "--every probectl worker")
}

// A dry run shows the number the release will get and uses none up: the record that follows gets
// it. A release recorded without --ways-back approves 'previous' when there is a previous release
// and says so; the first release, or --ways-back none, approves none.
func TestDeployRecordDryRunKeepsItsNumberAndWaysBackDefaultToPrevious(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	c := withDB(url)

	for range 2 {
		res := c.run(t, "deploy", "record", "--dry-run")
		require.Equal(t, 0, res.Code, res.Stderr)
		require.Contains(t, res.Stdout, "would record release #1 (dev)")
		require.NotContains(t, res.Stdout, "no --ways-back given", "a first release has no previous to go back to")
	}
	res := c.run(t, "deploy", "record")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "recorded release #1 (dev)")

	type recorded struct {
		Release struct {
			ID       int64    `json:"id"`
			WaysBack []string `json:"ways_back"`
		} `json:"release"`
		Event struct {
			ID int64 `json:"id"`
		} `json:"event"`
		WaysBackDefaulted bool `json:"ways_back_defaulted"`
	}
	res = c.run(t, "deploy", "record", "--version", "v2", "--dry-run", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var dry recorded
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &dry), res.Stdout)
	res = c.run(t, "deploy", "record", "--version", "v2", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var real recorded
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &real), res.Stdout)
	require.Equal(t, dry, real, "the dry run showed what was then recorded, number and event included")
	require.Equal(t, int64(2), real.Release.ID)
	require.Equal(t, []string{"previous"}, real.Release.WaysBack)
	require.True(t, real.WaysBackDefaulted)

	res = c.run(t, "deploy", "record", "--version", "v3")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "no --ways-back given: it approves 'previous' (rollback --to-previous to #2 (v2))")
	res = c.run(t, "deploy", "record", "--version", "v4", "--ways-back", "none", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var none recorded
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &none), res.Stdout)
	require.Empty(t, none.Release.WaysBack)
	require.False(t, none.WaysBackDefaulted)
}
