package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/probe/worker"
)

func TestEverySettingADomainErrorNamesIsSaidAsAFlagTheCommandHas(t *testing.T) {
	t.Parallel()
	io, _, _, _ := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	runRound, record, work := newRunRoundCmd(f, nil), newDeployRecordCmd(f), newWorkerCmd(f)
	for _, fl := range settings.Fields {
		require.NotEmpty(t, fl.Flag, "%s has a flag", fl.Name)
		assert.Equal(t, "--"+fl.Flag, flagOf(fl.Name))
		assert.NotNil(t, runRound.Flags().Lookup(fl.Flag), "run round has --%s for %s", fl.Flag, fl.Name)
		if fl.Carried {
			assert.NotNil(t, record.Flags().Lookup(fl.Flag), "deploy record has --%s for %s, which a release carries", fl.Flag, fl.Name)
		} else {
			assert.Nil(t, record.Flags().Lookup(fl.Flag), "deploy record has no --%s: a release does not carry %s", fl.Flag, fl.Name)
		}
	}
	assert.NotNil(t, work.Flags().Lookup(settingFlags[worker.SettingMaxWorkers]))
	assert.Equal(t, "--claim-limit", flagOf(settings.ClaimLimit))
	assert.Equal(t, "lease", flagOf("lease"), "a name without a flag is said as it is")
}

// check's round settings are the field table's rows: the same flag, usage, default and value type
// as run round's, so their help and bounds cannot drift apart.
func TestChecksRoundSettingFlagsAreTheFieldTables(t *testing.T) {
	t.Parallel()
	io, _, _, _ := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	check, runRound := newCheckCmd(f), newRunRoundCmd(f, nil)
	require.NotEmpty(t, checkSettings)
	for _, name := range checkSettings {
		field, ok := settings.Lookup(name)
		require.True(t, ok, "%s is a row of the field table", name)
		got, want := check.Flags().Lookup(field.Flag), runRound.Flags().Lookup(field.Flag)
		require.NotNil(t, got, "check has --%s", field.Flag)
		assert.Equal(t, field.Usage, got.Usage, "--%s", field.Flag)
		assert.Equal(t, want.DefValue, got.DefValue, "--%s", field.Flag)
		assert.Equal(t, want.Value.Type(), got.Value.Type(), "--%s", field.Flag)
	}
}
