package retention_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/retention"
)

// Durations in retention's messages are written as tables and flags write them ("3d", not
// "72h0m0s").
func TestRetentionMessagesSayDurationsAsTablesWriteThem(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	require.EqualError(t, retention.CheckSetting(&day, ""), "keep 1d: at least 3d (prune never reaches the last 2 days)")

	err := &retention.LockError{Table: "probe_runs_p20261007", Tries: 3, Waited: 1234567 * time.Microsecond,
		Err: errors.New("lock timeout")}
	require.Contains(t, err.Error(), "after 3 tries over 1.234s (each waiting 0.03s)")
}
