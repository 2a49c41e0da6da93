package alerts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// A round.dead alert ends by itself oneShotFor after it; one sent (or retried) after its round
// recovered ends at the recovery, and says when it was resolved, so that Alertmanager does not
// show as firing a round that is whole again.
func TestARoundDeadSentAfterItsRecoveryEndsAtTheRecovery(t *testing.T) {
	round := int64(7)
	dead := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := queries.Delivery{EventID: "e", Type: TypeRoundDead, RoundID: &round, CreatedAt: dead}
	a := amAlertOf(eventOf(d), nil)
	require.Equal(t, dead.Add(oneShotFor), *a.EndsAt)
	require.Equal(t, map[string]string{"alertname": "ProbectlRoundDead", "round": "7"}, a.Labels)

	recovered := dead.Add(time.Minute)
	d.ResolvedAt = &recovered
	ev := eventOf(d)
	require.Equal(t, &recovered, ev.Data.ResolvedAt)
	require.Equal(t, recovered, *amAlertOf(ev, nil).EndsAt)

	late := dead.Add(time.Hour) // recovered after the alert had ended by itself
	d.ResolvedAt = &late
	require.Equal(t, dead.Add(oneShotFor), *amAlertOf(eventOf(d), nil).EndsAt)
}
