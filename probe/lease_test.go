package probe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

func TestTheLocalLeaseEndsBeforeTheDatabasesOnEitherClock(t *testing.T) {
	t.Parallel()
	start := time.Now()
	l := newLease(start)
	end := queries.InFlightWindow - leaseMargin
	require.NoError(t, l.ended(start))
	require.NoError(t, l.ended(start.Add(end-time.Second)))
	// On the monotonic clock (a time read on this machine carries it).
	require.Error(t, l.ended(start.Add(end)))
	// On the wall clock alone (what a machine that was suspended reads: its monotonic clock
	// stopped, its wall clock did not).
	require.Error(t, l.ended(start.Round(0).Add(end)))
	var le *LeaseError
	require.ErrorAs(t, l.ended(start.Add(queries.InFlightWindow)), &le)
	require.Contains(t, le.Error(), "no request is sent after it")
}

func TestALeaseErrorSaysItsDurationsAsTablesWriteThem(t *testing.T) {
	t.Parallel()
	err := &LeaseError{End: time.Date(2026, 10, 7, 22, 13, 24, 0, time.UTC)}
	require.Equal(t, "the job's lease ended at 2026-10-07T22:13:24Z (in-flight window 15m less 30s): "+
		"no request is sent after it", err.Error())
}
