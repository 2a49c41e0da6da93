package retention_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/queries"
)

// 'runs retention set --unit week' changes the unit and nothing else: a keep another sets
// meanwhile stands. The other's change holds the row, uncommitted, while the set runs; a set that
// read keep first (before that change) and wrote it back with the unit would put it back to
// "for ever" once the other commits.
func TestSettingTheUnitLeavesAKeepSetMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)

	other, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = other.Rollback(ctx) }()
	keep := 30 * 24 * time.Hour
	_, err = queries.SetRetention(ctx, other, &keep, "", "other")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := retention.Set(ctx, pool, retention.Change{Unit: "week"}, "tester")
		done <- err
	}()
	dbtest.WaitForLockWait(t, pool, "", "no session waited for a lock")
	require.NoError(t, other.Commit(ctx))
	require.NoError(t, <-done)

	r, err := retention.Get(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, "week", r.Unit)
	require.NotNil(t, r.Keep, "the keep set meanwhile was written back over")
	require.Equal(t, keep, *r.Keep)
	require.Equal(t, "tester", *r.UpdatedBy)

	// A change that gives nothing is refused, and changes nothing.
	var se *retention.SettingError
	_, err = retention.Set(ctx, pool, retention.Change{}, "tester")
	require.ErrorAs(t, err, &se)
	after, err := retention.Get(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, r, after)
}

// The change's own rules are the domain's, judged without a database: something to change, and
// not both a keep and for ever (found in review: only the command refused that pair, and Set
// took it, dropping for ever without a word).
func TestCheckChangeRefusesNothingAndAKeepWithForEver(t *testing.T) {
	keep := 5 * 24 * time.Hour
	var se *retention.SettingError
	require.ErrorAs(t, retention.CheckChange(retention.Change{}), &se)
	assert.Equal(t, "give keep DURATION or forever (or unit)", se.Reason)
	require.ErrorAs(t, retention.CheckChange(retention.Change{Keep: &keep, Forever: true}), &se)
	assert.Equal(t, "keep and forever: give one", se.Reason)
	require.NoError(t, retention.CheckChange(retention.Change{Keep: &keep}))
	require.NoError(t, retention.CheckChange(retention.Change{Forever: true}))
	require.NoError(t, retention.CheckChange(retention.Change{Unit: "week"}))
}
