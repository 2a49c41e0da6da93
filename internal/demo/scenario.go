package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// demoSteps is how many steps the default scenario has.
const demoSteps = 7

// parallel are the settings of the parallel version, with its fix: fan-out 19, claim limit 5,
// concurrency 3, the spacing guard on and the one-transaction finish.
func parallel() release.Settings {
	s := settings.Default().Carried
	s.Fanout, s.ClaimLimit, s.Concurrency = 19, 5, 3
	s.RequestTimeout = settings.Duration(RequestTimeout)
	return s
}

// demo is the default scenario: parallel rounds until nothing is due, read back by deploy verify
// and the duplicate audit, and the fanout-off rollback planned.
func (e *env) demo(ctx context.Context) error {
	if err := e.startDatabase(ctx, demoSteps); err != nil {
		return err
	}
	if err := e.startFleet(ctx, 3, demoSteps); err != nil {
		return err
	}
	e.rep.Step(4, demoSteps, "signing with a throwaway key; recording a release with fan-out 19, claim limit 5, concurrency 3")
	if err := e.newKey(ctx); err != nil {
		return err
	}
	rec, err := e.record(ctx, parallel(), release.Ways, "parallel rounds: 19 fan-out messages, 5 servers each, 3 at a time")
	if err != nil {
		return err
	}

	e.rep.Step(5, demoSteps, "running parallel rounds until nothing is due (20 invocations × 5 servers each)")
	rounds, err := e.rounds(ctx, 0, nil)
	if err != nil {
		return err
	}

	e.rep.Step(6, demoSteps, "reading back what the rounds did: deploy verify and audit duplicates")
	e.rep.Say("$ probectl deploy verify --rounds %d", len(rounds))
	if e.res.Verify, err = release.Verify(ctx, e.pool, release.VerifyRequest{Rounds: len(rounds)}); err != nil {
		return err
	}
	e.rep.Verify(e.res.Verify)
	since := rec.Event.At
	e.rep.Say("$ probectl audit duplicates --since %s", since.UTC().Format(time.RFC3339Nano))
	if e.res.Duplicates, err = audit.Duplicates(ctx, e.pool, audit.DuplicatesParams{Since: since}); err != nil {
		return err
	}
	e.rep.Duplicates(e.res.Duplicates)

	e.rep.Step(7, demoSteps, "what switching fan-out off would change (a dry run)")
	e.rep.Say("$ probectl rollback --fanout-off --dry-run")
	req := release.RollbackRequest{Way: release.WayFanoutOff, Actor: e.opts.Actor, Reason: "demo"}
	if e.res.Rollback, err = release.PlanRollback(ctx, e.pool, req); err != nil {
		return err
	}
	e.rep.RollbackPlanned(e.res.Rollback, true)
	return e.demoOutcome()
}

// demoOutcome checks that the default scenario shows what it must: every round with as many
// jobs, runs and servers, verify passing and no duplicate claim.
func (e *env) demoOutcome() error {
	var problems []string
	for _, s := range e.res.Rounds {
		if s.Jobs != s.Runs || s.Jobs != s.Servers || s.OpenJobs != 0 {
			problems = append(problems, fmt.Sprintf("round %d: %d jobs, %d runs, %d servers, %d open", s.RoundID, s.Jobs, s.Runs, s.Servers, s.OpenJobs))
		}
	}
	if n := e.res.Jobs(); n != e.opts.Servers {
		problems = append(problems, fmt.Sprintf("%d jobs for a fleet of %d servers", n, e.opts.Servers))
	}
	if v := e.res.Verify.Verdict; v != release.VerdictPass {
		problems = append(problems, "deploy verify says "+v)
	}
	if n := len(e.res.Duplicates.Pairs); n != 0 {
		problems = append(problems, fmt.Sprintf("the audit found %d duplicate claim(s)", n))
	}
	if len(problems) > 0 {
		return &UnexpectedError{Problems: problems}
	}
	return nil
}
