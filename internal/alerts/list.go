package alerts

import (
	"context"
	"time"

	"github.com/probectl/probectl/queries"
)

// MaxList bounds `alerts list`.
const MaxList = 10000

// ListOptions choose the events listed.
type ListOptions struct {
	// Open keeps the server.down alerts not resolved yet.
	Open bool
	// Since, when set, keeps the events created since then.
	Since *time.Time
	// Limit is the most events listed (newest first), at most MaxList.
	Limit int
}

// Listed is an event with its deliveries.
type Listed struct {
	queries.AlertEvent
	Deliveries []queries.EventDelivery
}

// List lists events, newest first, each with its deliveries per receiver.
func List(ctx context.Context, db queries.DBTX, o ListOptions) ([]Listed, error) {
	if o.Limit <= 0 || o.Limit > MaxList {
		o.Limit = MaxList
	}
	evs, err := queries.ListAlertEvents(ctx, db, o.Open, o.Since, o.Limit)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	ds, err := queries.EventDeliveries(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	by := map[string][]queries.EventDelivery{}
	for _, d := range ds {
		by[d.EventID] = append(by[d.EventID], d)
	}
	out := make([]Listed, len(evs))
	for i, e := range evs {
		out[i] = Listed{AlertEvent: e, Deliveries: by[e.ID]}
		if out[i].Deliveries == nil {
			out[i].Deliveries = []queries.EventDelivery{}
		}
	}
	return out, nil
}

// RoundDegraded says whether the storm guard judged round roundID degraded, with the tally that
// tipped it; nil when it did not.
func RoundDegraded(ctx context.Context, db queries.DBTX, roundID int64) (*queries.DegradedRound, error) {
	m, err := queries.DegradedRounds(ctx, db, []int64{roundID})
	if err != nil {
		return nil, err
	}
	if d, ok := m[roundID]; ok {
		return &d, nil
	}
	return nil, nil
}

// MaxDeadRoundsAtOnce bounds the rounds one call of EmitDeadRounds judges (dead, and recovered
// since); the next call takes the rest.
const MaxDeadRoundsAtOnce = 100

// EmitDeadRounds emits one round.dead event per round found dead (its heartbeat older than
// queries.RoundDeadAfter), not judged before and not recovered already (every job it claimed
// stored, by runs recover), and one round.recovered event per round alerted dead that is
// recovered since; it returns how many events. The worker leader's tick, 'alerts deliver' and
// 'run round' call it; a round is judged once whoever calls (alert_dead_rounds).
func EmitDeadRounds(ctx context.Context, db queries.DBTX) (int, error) {
	ids, err := queries.JudgeDeadRounds(ctx, db, MaxDeadRoundsAtOnce)
	return len(ids), err
}

// DeadRoundsUnjudged says whether EmitDeadRounds has a round to look at.
func DeadRoundsUnjudged(ctx context.Context, db queries.DBTX) (bool, error) {
	return queries.DeadRoundsUnjudged(ctx, db)
}
