package probe

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// An invocation that ends incomplete (here one finish is refused) is an error River retries: the
// retry, the same invocation of the same round, claims only what its first attempt left of its
// share. It used to claim a whole share again, so the round claimed more than its capacity.
func TestARetriedInvocationClaimsNoMoreThanItsShare(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	ids := dueServers(t, pool, 6)
	s := testSettings(FinishTx)
	s.ClaimLimit, s.Concurrency = 2, 2
	round, startedAt, err := StartRound(ctx, pool, s, "")
	require.NoError(t, err)
	// The runs of the first two servers are refused: the first attempt's finishes fail.
	_, err = pool.Exec(ctx, strings.Replace(testSQL(t, "refuse_runs_of_server.sql"), "NEW.server_id = 0",
		"NEW.server_id <= "+strconv.FormatInt(ids[1], 10), 1))
	require.NoError(t, err)
	attempt := func(index int) (Progress, error) {
		inv := &Invocation{DB: pool, Settings: s, Checker: &okChecker{}, RoundID: round, Index: index,
			Deadline: startedAt.Add(time.Hour)}
		return inv.Run(ctx)
	}

	first, err := attempt(0)
	var incomplete *IncompleteError
	require.ErrorAs(t, err, &incomplete, "the first attempt ends incomplete: River retries it")
	require.Equal(t, 2, first.Claimed)

	retry, err := attempt(0)
	require.NoError(t, err)
	require.Zero(t, retry.Claimed, "its share was claimed by its first attempt")

	other, err := attempt(1)
	require.NoError(t, err)
	require.Equal(t, 2, other.Claimed, "another invocation of the round claims its own share")
	n, err := queries.InvocationClaimed(ctx, pool, round, 0)
	require.NoError(t, err)
	require.Equal(t, 2, n.Claimed)
}
