package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/queries"
)

// RollbackRequest asks for one way back.
type RollbackRequest struct {
	Way    Way
	Actor  string
	Reason string
	// Force overrides a plan that did not approve the way back; it needs a Reason.
	Force bool
	// ExpectActive is the active release the caller showed the user and had confirmed (0: any).
	// If another release is active by the time the rollback runs, nothing changes.
	ExpectActive int64
	// Now, when set, stands in for the database's now().
	Now *time.Time

	// Test seams (set from export_test.go): afterLock runs once the locks are held and the active
	// release read; noAdvisoryLock skips the releases lock and noRowLock the active row's lock, to
	// show what each guards.
	afterLock      func()
	noAdvisoryLock bool
	noRowLock      bool
}

// RollbackPlan is what a rollback changes: which release is active now and which will be.
type RollbackPlan struct {
	Way  Way
	From Release
	// To is the release that becomes active. For fanout-off it is the derived release; its ID is 0
	// until the rollback is applied.
	To Release
	// Forced is set when the plan of From did not approve the way back and Force overrode it.
	Forced bool
	// AlreadyDone is set when the active release already is the result of this way back; Done is
	// then the event that made it so (nil for a fanout-off that was recorded as such).
	AlreadyDone bool
	Done        *Event
	// Event is the activation the rollback recorded (nil for a plan, or when already done).
	Event *Event
}

// NotApprovedError says the active release's plan did not approve the way back asked for.
type NotApprovedError struct {
	Release Release
	Way     Way
}

func (e *NotApprovedError) Error() string { return e.text().Error() }

// Unwrap is the message, whose flags a command says its way (internal/input).
func (e *NotApprovedError) Unwrap() error { return e.text() }

func (e *NotApprovedError) text() *input.Text {
	approved := "none"
	if len(e.Release.WaysBack) > 0 {
		ways := make([]string, len(e.Release.WaysBack))
		for i, w := range e.Release.WaysBack {
			ways[i] = string(w)
		}
		approved = strings.Join(ways, ", ")
	}
	return input.Errorf("release #%d (%s) did not approve the way back %q (approved: %s); "+
		"pass %s %s \"...\" to roll back anyway", e.Release.ID, e.Release.Version, e.Way, approved, InputForce, InputReason)
}

// ExitCode: an unapproved way back is refused as bad input; nothing changed.
func (e *NotApprovedError) ExitCode() int { return exit.Usage }

// ActiveChangedError says the active release changed between the plan the user confirmed and
// the rollback: nothing was changed, and the user should look again.
type ActiveChangedError struct{ Expected, Now int64 }

func (e *ActiveChangedError) Error() string {
	return fmt.Sprintf("the active release changed from #%d to #%d while the rollback was being confirmed; "+
		"nothing was changed: run `probectl deploy list` and decide again", e.Expected, e.Now)
}

// ExitCode: the rollback could not be done as confirmed.
func (e *ActiveChangedError) ExitCode() int { return exit.Unavailable }

// PlanRollback says what the rollback would change, without changing anything (--dry-run, and
// the before/after shown for confirmation).
func PlanRollback(ctx context.Context, pool queries.DB, req RollbackRequest) (*RollbackPlan, error) {
	if err := req.validate(); err != nil {
		return nil, exit.UsageError(err)
	}
	var plan *RollbackPlan
	err := queries.InReadOnlyTx(ctx, pool, func(tx pgx.Tx) error {
		active, err := queries.ActiveRelease(ctx, tx)
		if err != nil {
			return noActive(err)
		}
		plan, err = planFrom(ctx, tx, req, active)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("plan rollback %s: %w", req.Way, err)
	}
	return plan, nil
}

// Rollback applies one way back in one transaction that writes releases and release_events only.
// Two rollbacks at once take turns on the releases lock: the second sees the first's result and
// finds the rollback already done. A rollback that is already done changes nothing and returns a
// plan with AlreadyDone set.
func Rollback(ctx context.Context, pool queries.DB, req RollbackRequest) (*RollbackPlan, error) {
	if err := req.validate(); err != nil {
		return nil, exit.UsageError(err)
	}
	var plan *RollbackPlan
	err := queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		if !req.noAdvisoryLock {
			if err := queries.LockReleases(ctx, tx); err != nil {
				return err
			}
		}
		var active Release
		var err error
		if req.noRowLock {
			active, err = queries.ActiveRelease(ctx, tx)
		} else {
			active, err = queries.ActiveReleaseForUpdate(ctx, tx)
		}
		if err != nil {
			return noActive(err)
		}
		if req.afterLock != nil {
			req.afterLock()
		}
		if plan, err = planFrom(ctx, tx, req, active); err != nil || plan.AlreadyDone {
			return err
		}
		if req.ExpectActive != 0 && req.ExpectActive != active.ID {
			return &ActiveChangedError{Expected: req.ExpectActive, Now: active.ID}
		}
		return apply(ctx, tx, req, plan)
	})
	if err != nil {
		return nil, fmt.Errorf("rollback %s: %w", req.Way, err)
	}
	return plan, nil
}

// ValidateRollback checks a request before anything connects: bad input, exit 2, naming the flag.
func ValidateRollback(req RollbackRequest) error {
	return exit.UsageError(req.validate())
}

func (req RollbackRequest) validate() error {
	switch {
	case req.Way != WayPrevious && req.Way != WayFanoutOff:
		return input.Errorf("pass %s or %s", InputToPrevious, InputFanoutOff)
	case req.Actor == "":
		return input.Errorf("%s: must not be empty ($USER is not set either)", InputActor)
	case req.Force && req.Reason == "":
		return input.Errorf("%s needs %s: say why the plan is being overridden", InputForce, InputReason)
	}
	return nil
}

func noActive(err error) error {
	if errors.Is(err, queries.ErrNoRelease) {
		return exit.UsageError(errors.New("no release is active: nothing to roll back (see `probectl deploy list`)"))
	}
	return err
}

// planFrom works out the rollback from the active release.
func planFrom(ctx context.Context, db queries.DBTX, req RollbackRequest, active Release) (*RollbackPlan, error) {
	plan := &RollbackPlan{Way: req.Way, From: active}
	switch req.Way {
	case WayPrevious:
		last, err := queries.LastActivation(ctx, db, active.ID)
		if err != nil && !errors.Is(err, queries.ErrNoRelease) {
			return nil, err
		}
		if err == nil && last.Action == ActionToPrevious {
			plan.AlreadyDone, plan.Done, plan.To = true, &last, active
			return plan, nil
		}
		if active.PreviousID == nil {
			return nil, exit.UsageError(fmt.Errorf("release #%d (%s) has no previous release to go back to",
				active.ID, active.Version))
		}
		prev, err := queries.GetRelease(ctx, db, *active.PreviousID)
		if err != nil {
			return nil, fmt.Errorf("read previous release #%d: %w", *active.PreviousID, err)
		}
		plan.To = prev
	case WayFanoutOff:
		if IsFanoutOff(active.Carried) {
			plan.AlreadyDone, plan.To = true, active
			if last, err := queries.LastActivation(ctx, db, active.ID); err == nil && last.Action == ActionFanoutOff {
				plan.Done = &last
			}
			return plan, nil
		}
		plan.To = fanoutOffOf(active, req.Actor)
	}
	if !Approves(active, req.Way) {
		if !req.Force {
			return nil, &NotApprovedError{Release: active, Way: req.Way}
		}
		plan.Forced = true
	}
	return plan, nil
}

// fanoutOffOf is the release a fanout-off rollback activates: the same version and plan, no
// fan-out, one check at a time. Its previous release is the one it derives from's, so that a
// later --to-previous goes back to the version before, not to the fan-out that was switched off.
func fanoutOffOf(r Release, actor string) Release {
	derived := r.ID
	return Release{
		Version: r.Version, Carried: FanoutOff(r.Carried), WaysBack: r.WaysBack,
		Note: fmt.Sprintf("fan-out off: rollback of release #%d", r.ID), DeployedBy: actor,
		Kind: KindFanoutOff, PreviousID: r.PreviousID, DerivedFrom: &derived,
	}
}

// apply writes the plan: deactivate From, activate (or insert) To, mark From rolled back, record
// the event. Nothing but releases and release_events is written.
func apply(ctx context.Context, tx pgx.Tx, req RollbackRequest, plan *RollbackPlan) error {
	if err := queries.DeactivateRelease(ctx, tx, plan.From.ID); err != nil {
		return err
	}
	toID := plan.To.ID
	if plan.Way == WayFanoutOff {
		id, err := queries.InsertRelease(ctx, tx, insertParams(plan.To, req.Now))
		if err != nil {
			return err
		}
		toID = id
	} else if err := queries.ActivateRelease(ctx, tx, toID); err != nil {
		return err
	}
	if err := queries.MarkReleaseRolledBack(ctx, tx, plan.From.ID, req.Actor, req.Reason, req.Now); err != nil {
		return err
	}
	action := ActionToPrevious
	if plan.Way == WayFanoutOff {
		action = ActionFanoutOff
	}
	ev, err := queries.InsertReleaseEvent(ctx, tx, Event{ReleaseID: toID, FromReleaseID: &plan.From.ID,
		Action: action, Forced: plan.Forced, Actor: req.Actor, Reason: req.Reason}, req.Now)
	if err != nil {
		return err
	}
	plan.Event = &ev
	to, err := queries.GetRelease(ctx, tx, toID)
	if err != nil {
		return err
	}
	plan.To = to
	return nil
}
