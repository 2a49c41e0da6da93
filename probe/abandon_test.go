package probe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// A round closes the jobs open past the in-flight window when it starts, once (its claims do not,
// probe_claim_due): the server of a job whose prober died is claimed again by the next round, and
// the dead job is closed as abandoned.
func TestARoundStartClosesAnAbandonedJobAndClaimsItsServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	requested := time.Now().Add(-queries.InFlightWindow - time.Minute)
	// As a dead prober's claim left it: leased until its job's window ended, a minute ago.
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(requested.Add(queries.InFlightWindow))})
	dead := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &requested})

	sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: &okChecker{}}).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Runs, "the round checks the server whose job was abandoned")

	var outcome string
	require.NoError(t, pool.QueryRow(ctx, "SELECT outcome FROM probe_jobs WHERE id = $1", dead).Scan(&outcome))
	require.Equal(t, "abandoned", outcome)
}
