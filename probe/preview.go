package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/probectl/probectl/queries"
)

// Plan is what a round with these settings would claim now, and why the other due servers would
// be skipped. Making it claims and writes nothing.
type Plan struct {
	Now      time.Time
	Settings Settings
	// Capacity is the most jobs the round could claim: invocations × claim limit.
	Capacity int
	// Servers are those whose next check time has passed, in claim order.
	Servers []PlannedServer
	// Claimable counts the servers a claim would take now; WouldClaim is min(Claimable, Capacity).
	Claimable, WouldClaim int
	// Skipped counts due servers a claim would skip, by state (open_job, spacing, paused, delisted);
	// Claimable counts those whose job the round's start closes as abandoned too.
	Skipped map[string]int
	// NotDue counts active servers whose next check time is still ahead; NextDueAt is the soonest.
	NotDue    int
	NextDueAt *time.Time
	// Leased counts, among those, the servers in flight under a lease: a claim takes the due
	// servers in (next check time, id) order, locks their rows, skipping those another claim
	// holds, and moves each one's next check time to its job's lease end (claim + the in-flight
	// window); its finish sets the real next time, and if its prober dies it is due again then.
	Leased int
	// Refused counts the claimable servers the SSRF guard will refuse (PreviewGuarded);
	// RefusedPrivate, those among them that allowing private targets would let through (the
	// others are metadata or link-local addresses, which no setting allows).
	Refused, RefusedPrivate int
}

// PlannedServer is one due server and what the round would do with it.
type PlannedServer struct {
	queries.PreviewServer
	// WouldClaim: claimable and within the round's capacity.
	WouldClaim bool
	// Why explains the state in a few words.
	Why string
	// Refused is why the SSRF guard will refuse to check it ("" when it will not, or when that
	// was not judged): see PreviewGuarded.
	Refused string
}

// Preview plans a round without claiming anything. It reads as of now when set (tests), else as
// of the database's clock, read once, the one a claim judges due servers and spacing by.
func Preview(ctx context.Context, db queries.DBTX, s Settings, now *time.Time) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var at time.Time
	if now != nil {
		at = *now
	} else {
		var err error
		if at, err = queries.StatusNow(ctx, db, nil); err != nil {
			return nil, fmt.Errorf("preview round: %w", err)
		}
	}
	servers, err := queries.ClaimPreview(ctx, db, s.MinSpacing.D(), queries.InFlightWindow, &at)
	if err != nil {
		return nil, err
	}
	notDue, next, err := queries.CountNotDue(ctx, db, &at)
	if err != nil {
		return nil, err
	}
	leased, err := queries.CountLeased(ctx, db, queries.InFlightWindow, &at)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Now: at.UTC(), Settings: s, Capacity: s.Capacity(), Skipped: map[string]int{},
		NotDue: notDue, NextDueAt: next, Leased: leased}
	for _, ps := range servers {
		p := PlannedServer{PreviewServer: ps, Why: why(ps, s)}
		// An abandoned job is closed when a round starts (StartRound), before its claims: its
		// server is claimable for the round this plan is of.
		if ps.State == "claimable" || ps.State == "abandoned" {
			plan.Claimable++
			p.WouldClaim = plan.WouldClaim < plan.Capacity
			if p.WouldClaim {
				plan.WouldClaim++
			} else {
				p.Why += "; beyond this round's capacity"
			}
		} else {
			plan.Skipped[ps.State]++
		}
		plan.Servers = append(plan.Servers, p)
	}
	return plan, nil
}

func why(ps queries.PreviewServer, s Settings) string {
	switch ps.State {
	case "claimable":
		if ps.Reason == "maintainer_claim" {
			return "due; a maintainer claimed it (passes the spacing guard)"
		}
		return "due"
	case "abandoned":
		return fmt.Sprintf("due; its job is open past the in-flight window of %s: the round closes it as abandoned when it starts, then claims the server", queries.InFlightWindow)
	case "open_job":
		// A leasing claim moves its server out of the due range; a server due with an open job was
		// claimed without a lease (a previous probectl during a rolling deploy).
		return fmt.Sprintf("an open job (in flight for at most %s); if it never finishes it is closed as abandoned then", queries.InFlightWindow)
	case "spacing":
		return fmt.Sprintf("spacing guard: its last job was requested less than %s ago", s.MinSpacing)
	case "paused", "delisted":
		return ps.State + "; claimable only when made active again"
	}
	return ps.State
}
