package alerts_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/testfactory"
)

// The defaults 'alerts policy set --help' shows are a new database's: DefaultPolicy says what
// alert_policy's column defaults are, and the two cannot drift apart unseen.
func TestDefaultPolicyIsANewDatabasesPolicy(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	p, err := alerts.ReadPolicy(t.Context(), pool)
	require.NoError(t, err)
	def := alerts.DefaultPolicy()
	p.UpdatedAt, p.UpdatedBy = def.UpdatedAt, def.UpdatedBy
	require.Equal(t, def, p)
	require.NoError(t, alerts.Validate(def))
}

// CheckChange judges only the settings a change gives, by the policy's bounds, without a
// database: the command's bad input exits 2 before it connects.
func TestCheckChangeJudgesTheGivenSettingsByThePolicysBounds(t *testing.T) {
	t.Parallel()
	require.NoError(t, alerts.CheckChange(alerts.PolicyChange{}))
	require.NoError(t, alerts.CheckChange(alerts.PolicyChange{DownAfter: testfactory.Ptr(alerts.MaxAfter),
		StormMin: testfactory.Ptr(alerts.MaxStormMin), ResendEvery: testfactory.Ptr(alerts.MaxResendEvery)}))
	for _, c := range []struct {
		change  alerts.PolicyChange
		setting alerts.Setting
	}{
		{alerts.PolicyChange{DownAfter: testfactory.Ptr(alerts.MaxAfter + 1)}, alerts.SettingDownAfter},
		{alerts.PolicyChange{UpAfter: testfactory.Ptr(0)}, alerts.SettingUpAfter},
		{alerts.PolicyChange{StormShare: testfactory.Ptr(alerts.MaxStormShare + 1)}, alerts.SettingStormShare},
		{alerts.PolicyChange{StormMin: testfactory.Ptr(alerts.MaxStormMin + 1)}, alerts.SettingStormMin},
		{alerts.PolicyChange{ResendEvery: testfactory.Ptr(alerts.MinResendEvery - time.Millisecond)}, alerts.SettingResendEvery},
	} {
		var se *alerts.SettingError
		require.True(t, errors.As(alerts.CheckChange(c.change), &se), "%s", c.setting)
		require.Equal(t, c.setting, se.Setting)
	}
}
