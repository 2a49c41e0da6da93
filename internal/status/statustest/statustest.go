// Package statustest plants the state that the status report, page and command are tested
// against: one database showing every section at once, at a fixed moment, so that golden files
// and a browser can check exactly what an operator would see.
package statustest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// Now is the moment the scenario is seen from: the evening of the incident.
var Now = time.Date(2026, 10, 7, 21, 0, 0, 0, time.UTC)

// Slugs of the scenario's servers, named for what each shows.
const (
	// DueLongest has been due for 3 h with no job: the oldest due server.
	DueLongest = "alpha-due-longest"
	// InFlight is due with an open job requested 3 min ago: a probe is checking it right now.
	InFlight = "bravo-in-flight"
	// BetweenWrites has an open job requested 4 min 12 s ago whose server was already advanced: the
	// probe made its first write (advance) and died before its second (finish).
	BetweenWrites = "charlie-between-writes"
	// Stale has a job open for 40 min, past the in-flight window: its probe died; the next claim
	// closes it as abandoned.
	Stale = "delta-stale"
	// Duplicate was claimed twice 3.168 s apart (0.168 s after the first job finished): the
	// incident's class of duplicate claim.
	Duplicate = "echo-duplicate"
)

// BetweenWritesAge is the age of the job left between its writes.
const BetweenWritesAge = 4*time.Minute + 12*time.Second

// Scenario holds the ids a test asserts on.
type Scenario struct {
	ReleaseID                               int64
	StaleRound, FinishedRound, RunningRound int64
	BetweenWritesJob, InFlightJob, StaleJob int64
	DuplicateFirstJob, DuplicateSecondJob   int64
}

// Seed plants the scenario in a migrated, empty database:
//
//   - release v1.4.0 (fan-out 19, claim limit 5, concurrency 3), deployed 2 h before Now;
//   - round 1, 40 min before Now, 1 job, left open (Stale);
//   - round 2, 20 min before Now, 43 s long: 4 jobs on 3 servers, one failed, and the duplicate
//     pair on Duplicate;
//   - round 3, 5 min before Now, still running: the open jobs of InFlight and BetweenWrites;
//   - servers due: DueLongest (3 h), InFlight (held by its job), Stale (its job is stale).
func Seed(ctx context.Context, t testing.TB, pool *pgxpool.Pool) Scenario {
	t.Helper()
	at := func(d time.Duration) *time.Time { v := Now.Add(d); return &v }
	var sc Scenario

	err := queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		var err error
		sc.ReleaseID, err = queries.InsertRelease(ctx, tx, queries.InsertReleaseParams{
			Version: "v1.4.0", Carried: settings.Default().Carried, WaysBack: []string{"previous", "fanout-off"}, DeployedBy: "release-bot",
			Kind: "deploy", Active: true, Now: at(-2 * time.Hour),
		})
		return err
	})
	if err != nil {
		t.Fatalf("statustest: insert release: %v", err)
	}
	rel := &sc.ReleaseID
	round := func(started time.Duration, finished *time.Time) int64 {
		return testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{Trigger: "cron", ReleaseID: rel,
			Version: "v1.4.0", Fanout: 19, ClaimLimit: 5, Concurrency: 3, StartedAt: at(started), FinishedAt: finished})
	}
	server := func(slug string, next time.Duration) int64 {
		return testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug,
			URL: "https://" + slug + ".example/", NextCheckAt: at(next)})
	}
	job := func(server, round int64, inv int, requested time.Duration, finished *time.Time, outcome string) int64 {
		return testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RoundID: &round,
			Invocation: &inv, RequestedAt: at(requested), FinishedAt: finished, Outcome: outcome})
	}
	run := func(job, server int64, started time.Duration, finished *time.Time) {
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: server,
			StartedAt: at(started), FinishedAt: finished, Envelope: json.RawMessage(`{"payloadType":"test"}`)})
	}

	server(DueLongest, -3*time.Hour)
	inFlight := server(InFlight, -30*time.Minute)
	// Advanced by its probe at the end of the check (first write), 12 h on; never finished.
	betweenWrites := server(BetweenWrites, -BetweenWritesAge+12*time.Hour+2*time.Second)
	stale := server(Stale, -time.Hour)
	dup := server(Duplicate, -20*time.Minute+12*time.Hour+5*time.Second)
	fine := server("foxtrot-ok", -20*time.Minute+12*time.Hour+2*time.Second)
	failing := server("golf-failing", -20*time.Minute+12*time.Hour+4*time.Second)

	sc.StaleRound = round(-40*time.Minute, at(-40*time.Minute+30*time.Second))
	sc.StaleJob = job(stale, sc.StaleRound, 0, -40*time.Minute, nil, "")

	sc.FinishedRound = round(-20*time.Minute, at(-20*time.Minute+43*time.Second))
	first := at(-20*time.Minute + 3*time.Second)
	sc.DuplicateFirstJob = job(dup, sc.FinishedRound, 0, -20*time.Minute, first, "ok")
	run(sc.DuplicateFirstJob, dup, -20*time.Minute, first)
	second := -20*time.Minute + 3*time.Second + 168*time.Millisecond
	sc.DuplicateSecondJob = job(dup, sc.FinishedRound, 7, second, at(second+2*time.Second), "ok")
	run(sc.DuplicateSecondJob, dup, second, at(second+2*time.Second))
	ok := job(fine, sc.FinishedRound, 1, -20*time.Minute, at(-20*time.Minute+2*time.Second), "ok")
	run(ok, fine, -20*time.Minute, at(-20*time.Minute+2*time.Second))
	failed := job(failing, sc.FinishedRound, 2, -20*time.Minute, at(-20*time.Minute+4*time.Second), "failed")
	run(failed, failing, -20*time.Minute, at(-20*time.Minute+4*time.Second))

	sc.RunningRound = round(-5*time.Minute, nil)
	sc.BetweenWritesJob = job(betweenWrites, sc.RunningRound, 3, -BetweenWritesAge, nil, "")
	sc.InFlightJob = job(inFlight, sc.RunningRound, 4, -3*time.Minute, nil, "")
	return sc
}
