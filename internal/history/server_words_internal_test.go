package history

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// servers show says the durations of its next check the way every table does (12h, 10m, 15m),
// not in Go's form (12h0m0s).
func TestTheNextCheckSaysItsDurationsAsEveryTableDoes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	job := int64(7)
	s := queries.Server{Slug: "weather", Status: "active", Plan: "standard", CheckInterval: 12 * time.Hour}
	for state, want := range map[string]string{
		"scheduled": "every 12h (standard plan)",
		"spacing":   "less than 10m before",
		"abandoned": "in-flight window of 15m:",
	} {
		n := queries.ServerNextCheck{State: state, ClaimableAt: &at, OpenJobID: &job, OpenRequestedAt: &at,
			SpacedSince: &at, MinSpacing: 10 * time.Minute}
		why := nextCheck(s, n, nil).Why
		require.Contains(t, why, want, state)
		require.NotContains(t, why, "0m0s", state)
	}
}
