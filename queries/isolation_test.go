package queries_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// The claim's lock serialises claims only under READ COMMITTED. On a database whose sessions
// default to REPEATABLE READ, the claim refuses to run rather than read a snapshot older than the
// lock, and probectl's own pool overrides that default so rounds still run there.
func TestTheClaimRunsOnlyUnderReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	setup, err := os.ReadFile("testdata/repeatable_read_by_default.sql")
	require.NoError(t, err)
	_, err = dbtest.Pool(t, url).Exec(ctx, string(setup))
	require.NoError(t, err)

	// A plain pool takes the database's default: the claim refuses.
	plain := dbtest.Pool(t, url)
	testfactory.Server(ctx, t, plain, nil)
	round := testfactory.Round(ctx, t, plain, nil)
	_, err = queries.Claim(ctx, plain, queries.ClaimParams{RoundID: round, Limit: 5})
	require.ErrorContains(t, err, "probe_claim_due must run under READ COMMITTED, not repeatable read")

	// probectl's pool sets READ COMMITTED for its sessions: the claim runs.
	pool, err := queries.Connect(ctx, url, "test", queries.ConnectOptions{})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
}
