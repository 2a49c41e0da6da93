package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/worker"
	"github.com/probectl/probectl/release"
)

func TestEverySettingADomainErrorNamesIsSaidAsAFlagTheCommandHas(t *testing.T) {
	t.Parallel()
	io, _, _, _ := testStreams()
	f := newFactory(io, testEnv(t), buildInfo{Version: "test"})
	runRound, record, work := newRunRoundCmd(f, nil), newDeployRecordCmd(f), newWorkerCmd(f)
	round := []probe.Setting{probe.SettingFanout, probe.SettingClaimLimit, probe.SettingConcurrency,
		probe.SettingMinSpacing, probe.SettingMaxDuration, probe.SettingRequestTimeout, probe.SettingMaxBody,
		probe.SettingFinish, probe.SettingTrigger, probe.SettingContact}
	for _, s := range round {
		require.Contains(t, settingFlags, s)
		assert.NotNil(t, runRound.Flags().Lookup(settingFlags[s]), "run round has --%s for %s", settingFlags[s], s)
	}
	for _, s := range release.ReleaseSettings {
		require.Contains(t, settingFlags, s, "a setting a release supplies can be overridden by a flag")
		assert.NotNil(t, record.Flags().Lookup(settingFlags[s]), "deploy record has --%s for %s", settingFlags[s], s)
	}
	assert.NotNil(t, work.Flags().Lookup(settingFlags[worker.SettingMaxWorkers]))
	assert.Equal(t, "--claim-limit", flagOf(probe.SettingClaimLimit))
	assert.Equal(t, "lease", flagOf("lease"), "a name without a flag is said as it is")
}
