package release_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/release"
)

func TestForRound(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	ctx := t.Context()

	t.Run("with no release recorded the round runs on the binary's defaults", func(t *testing.T) {
		r, err := release.ForRound(ctx, tmpl.Pool(t), "v2", false)
		require.NoError(t, err)
		require.Nil(t, r)
	})

	record(t, pool, "v1", sequential, release.WayPrevious)
	v2 := record(t, pool, "v2", parallel, release.WayPrevious)

	t.Run("the active version runs with the active release's settings", func(t *testing.T) {
		r, err := release.ForRound(ctx, pool, "v2", false)
		require.NoError(t, err)
		require.Equal(t, v2.ID, r.ID)
		require.Equal(t, parallel, release.SettingsOf(*r))
	})
	t.Run("another version is refused naming the active one", func(t *testing.T) {
		_, err := release.ForRound(ctx, pool, "v1", false)
		var mismatch *release.VersionMismatchError
		require.ErrorAs(t, err, &mismatch)
		require.Equal(t, exit.Unavailable, exit.Code(err))
		require.ErrorContains(t, err, "release #2 (version v2) is active")
		require.ErrorContains(t, err, "this probectl is version v1")
		require.NotContains(t, err.Error(), "--", "the command that runs the round names its own flags")
	})
	t.Run("another version runs anyway when told to ignore the version", func(t *testing.T) {
		r, err := release.ForRound(ctx, pool, "v1", true)
		require.NoError(t, err)
		require.Equal(t, v2.ID, r.ID)
	})
	t.Run("after a rollback to the previous release the old binary may probe again", func(t *testing.T) {
		rollback(t, pool, release.WayPrevious)
		_, err := release.ForRound(ctx, pool, "v2", false)
		require.ErrorAs(t, err, new(*release.VersionMismatchError), "the rolled-back worker must stop")
		r, err := release.ForRound(ctx, pool, "v1", false)
		require.NoError(t, err)
		require.Equal(t, sequential, release.SettingsOf(*r))
	})
}

func TestRoundSettingsTakeTheReleaseUnlessAFlagOverridesIt(t *testing.T) {
	t.Parallel()
	rel := &release.Release{ID: 7, Version: "v2", Fanout: 0, ClaimLimit: 5, Concurrency: 1, MinSpacing: 10 * time.Minute,
		RequestTimeout: 10 * time.Second, MaxDuration: 4 * time.Minute, FinishMode: "tx"}
	flags := probe.DefaultSettings() // fan-out 19, concurrency 3, as the flags default
	flags.Trigger, flags.Version = "cron", "v2"

	t.Run("no flag set: every setting is the release's", func(t *testing.T) {
		t.Parallel()
		got, overrides := release.RoundSettings(rel, flags, func(probe.Setting) bool { return false })
		require.Equal(t, 0, got.Fanout)
		require.Equal(t, 1, got.Concurrency)
		require.Equal(t, int64(7), *got.ReleaseID)
		require.Equal(t, "cron", got.Trigger, "what the release does not set stays")
		require.Empty(t, overrides)
	})
	t.Run("a flag set to another value overrides and is reported", func(t *testing.T) {
		t.Parallel()
		f := flags
		f.Concurrency = 2
		got, overrides := release.RoundSettings(rel, f, func(s probe.Setting) bool { return s == probe.SettingConcurrency })
		require.Equal(t, 2, got.Concurrency)
		require.Equal(t, 0, got.Fanout)
		require.Equal(t, []release.Override{{Setting: probe.SettingConcurrency, Release: "1", Round: "2"}}, overrides)
	})
	t.Run("a flag set to the release's value is no override", func(t *testing.T) {
		t.Parallel()
		f := flags
		f.Fanout = 0
		_, overrides := release.RoundSettings(rel, f, func(s probe.Setting) bool { return s == probe.SettingFanout })
		require.Empty(t, overrides)
	})
	t.Run("without a release the flags are used as given", func(t *testing.T) {
		t.Parallel()
		got, overrides := release.RoundSettings(nil, flags, func(probe.Setting) bool { return true })
		require.Equal(t, flags, got)
		require.Empty(t, overrides)
	})
}

func TestEveryReleaseSettingTheCallerSetsIsAppliedAndReported(t *testing.T) {
	t.Parallel()
	rel := &release.Release{ID: 7, Version: "v2", Fanout: 0, ClaimLimit: 5, Concurrency: 1, MinSpacing: 10 * time.Minute,
		RequestTimeout: 10 * time.Second, MaxDuration: 4 * time.Minute, FinishMode: release.FinishTx}
	flags := probe.DefaultSettings()
	flags.Trigger, flags.Version = "cron", "v2"
	// Each flag is set to a value unlike both the release's and the flag's default.
	cases := []struct {
		setting       probe.Setting
		set           func(s *probe.Settings)
		release, want string
	}{
		{probe.SettingFanout, func(s *probe.Settings) { s.Fanout = 7 }, "0", "7"},
		{probe.SettingClaimLimit, func(s *probe.Settings) { s.ClaimLimit = 9 }, "5", "9"},
		{probe.SettingConcurrency, func(s *probe.Settings) { s.Concurrency = 4 }, "1", "4"},
		{probe.SettingMinSpacing, func(s *probe.Settings) { s.MinSpacing = 3 * time.Minute }, "10m0s", "3m0s"},
		{probe.SettingRequestTimeout, func(s *probe.Settings) { s.RequestTimeout = 7 * time.Second }, "10s", "7s"},
		{probe.SettingMaxDuration, func(s *probe.Settings) { s.MaxDuration = 2 * time.Minute }, "4m0s", "2m0s"},
		{probe.SettingFinish, func(s *probe.Settings) { s.Finish = release.FinishAdvanceFirst }, release.FinishTx, release.FinishAdvanceFirst},
	}
	var tested []probe.Setting
	for _, tc := range cases {
		tested = append(tested, tc.setting)
		t.Run(string(tc.setting)+" set by the caller is what the round runs with, and is reported", func(t *testing.T) {
			t.Parallel()
			f := flags
			tc.set(&f)
			got, overrides := release.RoundSettings(rel, f, func(s probe.Setting) bool { return s == tc.setting })
			want := release.SettingsOf(*rel).Apply(flags)
			tc.set(&want)
			id := rel.ID
			want.ReleaseID = &id
			require.Equal(t, want, got, "the flag's value, and the release's for every other setting")
			require.Equal(t, []release.Override{{Setting: tc.setting, Release: tc.release, Round: tc.want}}, overrides)
		})
	}
	require.ElementsMatch(t, release.ReleaseSettings, tested, "every setting a release supplies has a case here")
}

func TestSettingsForRoundRefusesTheWrongVersionAndChecksTheLease(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	ctx := t.Context()
	record(t, pool, "v2", sequential, release.WayPrevious)
	flags := probe.DefaultSettings()
	flags.Version = "v2"

	t.Run("the active version gets the release's settings and its id", func(t *testing.T) {
		s, overrides, err := release.SettingsForRound(ctx, pool, release.RoundRequest{BinaryVersion: "v2", Flags: flags})
		require.NoError(t, err)
		require.Equal(t, sequential.ClaimLimit, s.ClaimLimit)
		require.NotNil(t, s.ReleaseID)
		require.Empty(t, overrides)
	})
	t.Run("another version is refused with exit 3", func(t *testing.T) {
		_, _, err := release.SettingsForRound(ctx, pool, release.RoundRequest{BinaryVersion: "v3", Flags: flags})
		require.Equal(t, exit.Unavailable, exit.Code(err))
	})
	t.Run("a flag that breaks the lease together with the release's budget is refused", func(t *testing.T) {
		f := flags
		f.RequestTimeout = 2 * time.Minute // 8 × 2m alone is past the 15-minute window
		_, _, err := release.SettingsForRound(ctx, pool, release.RoundRequest{BinaryVersion: "v2", Flags: f,
			Changed: func(s probe.Setting) bool { return s == probe.SettingRequestTimeout }})
		require.ErrorContains(t, err, "lease")
		require.Equal(t, exit.Usage, exit.Code(err))
	})
}
