package demo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/incident"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// incidentSteps is how many steps the replay has.
const incidentSteps = 9

// The replay's shape: one round of the sequential prober, two rounds with fan-out (the
// incident's 20:55 and 21:00 rounds), two after the rollback.
const (
	sequentialRounds = 1
	fanoutRounds     = 2
	afterRounds      = 2
	sequentialClaims = 20
	// minIncidentServers keeps servers due for every round of the replay: each claims up to its
	// capacity (20 × 5 with fan-out, 5 after the rollback).
	minIncidentServers = sequentialRounds*sequentialClaims + fanoutRounds*20*5 + afterRounds*5
)

// The gap between a finish's two writes is widened for the first widenedPerRound finishes of
// each round, as a slow network round trip would widen it, until the server is being checked
// again or widenAtMost has passed. The incident's second claims came 0.1 to 0.2 s after the first
// job finished, twice a round.
const (
	widenedPerRound = 2
	widenAtMost     = 500 * time.Millisecond
)

// sequential is the prober before the fan-out, as the replay runs it: one invocation checking one
// server at a time, the two writes in the old order, no spacing guard (it came with the fix).
func sequential() release.Settings {
	s := settings.Default().Carried
	s.Fanout, s.ClaimLimit, s.Concurrency = 0, sequentialClaims, 1
	s.MinSpacing, s.Finish, s.RequestTimeout = 0, release.FinishAdvanceFirst, settings.Duration(RequestTimeout)
	return s
}

// incidentParallel is the first parallel version: fan-out 19, claim limit 5, concurrency 3, and
// still the old order with no spacing guard.
func incidentParallel() release.Settings {
	s := sequential()
	s.Fanout, s.ClaimLimit, s.Concurrency = 19, 5, 3
	return s
}

// oldOrder puts the incident's order of writes into a round, with the gap widened as above.
func (e *env) oldOrder(r *probe.Round) {
	var widened atomic.Int32
	r.WriteOrder = incident.Order(func(ctx context.Context, job queries.ClaimedJob) {
		if widened.Add(1) > widenedPerRound {
			return
		}
		e.fleet.WaitForHit(ctx, job.Slug, e.fleet.Hits(job.Slug), widenAtMost)
	})
}

// oldRounds runs n rounds with the code of the incident's time: its order of writes and its claim,
// which did not lease the server (incident.UnleasedClaim), put back in the demo's own database for
// these rounds only, so that deploy verify's drift check reads the shipped claim again after them.
func (e *env) oldRounds(ctx context.Context, n int) error {
	restore, err := incident.UnleasedClaim(ctx, e.pool)
	if err != nil {
		return err
	}
	_, err = e.rounds(ctx, n, e.oldOrder)
	return errors.Join(err, restore(context.WithoutCancel(ctx)))
}

// incident replays the incident on the demo's own database.
func (e *env) incident(ctx context.Context) error {
	if err := e.startDatabase(ctx, incidentSteps); err != nil {
		return err
	}
	if err := e.startFleet(ctx, 3, incidentSteps); err != nil {
		return err
	}

	e.rep.Step(4, incidentSteps, "before 2026-10-07: the sequential prober, finishing the job first and advancing second")
	if err := e.newKey(ctx); err != nil {
		return err
	}
	before, err := e.record(ctx, sequential(), nil, "sequential: one invocation, one check at a time")
	if err != nil {
		return err
	}
	e.rep.Say("the replay puts the old order back: finish the job, then advance the next check time (no flag of run round can)")
	e.rep.Say("and widens the gap between the two writes for the first %d finishes of every round, as a slow network",
		widenedPerRound)
	e.rep.Say("round trip would, until the server is being checked again or %s pass", widenAtMost)
	e.rep.Say("and the claim of that time, which left a claimed server due while its job was open (no lease)")
	if err := e.oldRounds(ctx, sequentialRounds); err != nil {
		return err
	}

	e.rep.Step(5, incidentSteps, "20:53: the parallel version goes live: fan-out 19, claim limit 5, concurrency 3, same code")
	deploy, err := e.record(ctx, incidentParallel(), release.Ways, "parallel rounds: 19 fan-out messages, 5 servers each, 3 at a time")
	if err != nil {
		return err
	}
	if err := e.oldRounds(ctx, fanoutRounds); err != nil {
		return err
	}

	e.rep.Step(6, incidentSteps, "the release manager reads back the first rounds")
	e.rep.Say("$ probectl deploy verify --rounds %d", fanoutRounds)
	if e.res.Verify, err = release.Verify(ctx, e.pool, release.VerifyRequest{Rounds: fanoutRounds}); err != nil {
		return err
	}
	e.rep.Verify(e.res.Verify)

	e.rep.Step(7, incidentSteps, "rolling back: fan-out off, one of the two ways back the plan approved")
	reason := "duplicate claims in the first rounds after the deploy"
	e.rep.Say("$ probectl rollback --fanout-off --reason %q --yes", reason)
	req := release.RollbackRequest{Way: release.WayFanoutOff, Actor: e.opts.Actor, Reason: reason}
	plan, err := release.PlanRollback(ctx, e.pool, req)
	if err != nil {
		return err
	}
	e.rep.RollbackPlanned(plan, false)
	req.ExpectActive = plan.From.ID
	if e.res.Rollback, err = release.Rollback(ctx, e.pool, req); err != nil {
		return err
	}
	e.rep.RolledBack(e.res.Rollback)

	e.rep.Step(8, incidentSteps, "the next rounds, fan-out off: same code, same order, one claimer again")
	if err := e.oldRounds(ctx, afterRounds); err != nil {
		return err
	}
	e.rep.Say("$ probectl deploy verify --rounds %d", afterRounds)
	if e.res.VerifyAfterRollback, err = release.Verify(ctx, e.pool, release.VerifyRequest{Rounds: afterRounds}); err != nil {
		return err
	}
	e.rep.Verify(e.res.VerifyAfterRollback)

	e.rep.Step(9, incidentSteps, "the audit: before the deploy, while fan-out was live, after the rollback")
	since, deployedAt, rolledBackAt := before.Event.At, deploy.Event.At, e.res.Rollback.Event.At
	e.rep.Say("$ probectl audit duplicates --since %s --split-at %s --split-at %s", utcString(since),
		utcString(deployedAt), utcString(rolledBackAt))
	e.res.Duplicates, err = audit.Duplicates(ctx, e.pool, audit.DuplicatesParams{Since: since,
		SplitAt: []time.Time{deployedAt, rolledBackAt}})
	if err != nil {
		return err
	}
	e.rep.Duplicates(e.res.Duplicates)
	return e.incidentOutcome()
}

func utcString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// incidentOutcome checks that the replay showed the incident: duplicate claims while fan-out was
// live, none before or after, verify failing on them and passing after the rollback.
func (e *env) incidentOutcome() error {
	var problems []string
	periods := e.res.Duplicates.Periods
	if len(periods) != 3 {
		return &UnexpectedError{Problems: []string{fmt.Sprintf("the audit has %d periods, not 3", len(periods))}}
	}
	if periods[1].Unexplained == 0 {
		problems = append(problems, "the replay found no duplicate claim while fan-out was live")
	}
	if periods[0].Pairs != 0 || periods[2].Pairs != 0 {
		problems = append(problems, fmt.Sprintf("duplicate claims outside the fan-out: %d before, %d after", periods[0].Pairs, periods[2].Pairs))
	}
	if v := e.res.Verify.Verdict; v != release.VerdictFail {
		problems = append(problems, "deploy verify of the fan-out rounds says "+v+", not fail")
	}
	if v := e.res.VerifyAfterRollback.Verdict; v != release.VerdictPass {
		problems = append(problems, "deploy verify after the rollback says "+v+", not pass")
	}
	if len(problems) > 0 {
		return &UnexpectedError{Problems: problems}
	}
	return nil
}
