package settings_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/settings"
)

// release7 ships no fan-out and one check at a time, unlike the flags' defaults.
var release7 = &settings.Release{ID: 7, Carried: settings.Carried{Fanout: 0, ClaimLimit: 5, Concurrency: 1,
	MinSpacing: settings.Duration(10 * time.Minute), RequestTimeout: settings.Duration(10 * time.Second),
	MaxDuration: settings.Duration(4 * time.Minute), Finish: settings.FinishTx, Contact: "https://release.example/"}}

func flagsV2() settings.Settings {
	f := settings.Default() // fan-out 19, concurrency 3, as the flags default
	f.Trigger, f.Version = "cron", "v2"
	return f
}

func only(name settings.Setting) func(settings.Setting) bool {
	return func(s settings.Setting) bool { return s == name }
}

func TestRoundSettingsTakeTheReleaseUnlessAFlagOverridesIt(t *testing.T) {
	t.Parallel()
	t.Run("no flag set: every carried setting is the release's", func(t *testing.T) {
		t.Parallel()
		got, overrides, err := settings.Resolve(settings.Request{Release: release7, Flags: flagsV2()})
		require.NoError(t, err)
		require.Equal(t, 0, got.Fanout)
		require.Equal(t, 1, got.Concurrency)
		require.Equal(t, "https://release.example/", got.Contact)
		require.Equal(t, int64(7), *got.ReleaseID)
		require.Equal(t, "cron", got.Trigger, "what the release does not carry stays")
		require.Empty(t, overrides)
	})
	t.Run("a flag set to another value overrides and is reported", func(t *testing.T) {
		t.Parallel()
		f := flagsV2()
		f.Concurrency = 2
		got, overrides, err := settings.Resolve(settings.Request{Release: release7, Flags: f, Changed: only(settings.Concurrency)})
		require.NoError(t, err)
		require.Equal(t, 2, got.Concurrency)
		require.Equal(t, 0, got.Fanout)
		require.Equal(t, []settings.Override{{Setting: settings.Concurrency, Release: "1", Round: "2"}}, overrides)
	})
	t.Run("a flag set to the release's value is no override", func(t *testing.T) {
		t.Parallel()
		f := flagsV2()
		f.Fanout = 0
		_, overrides, err := settings.Resolve(settings.Request{Release: release7, Flags: f, Changed: only(settings.Fanout)})
		require.NoError(t, err)
		require.Empty(t, overrides)
	})
	t.Run("without a release the flags are used as given", func(t *testing.T) {
		t.Parallel()
		got, overrides, err := settings.Resolve(settings.Request{Flags: flagsV2(), Changed: func(settings.Setting) bool { return true }})
		require.NoError(t, err)
		require.Equal(t, flagsV2(), got)
		require.Empty(t, overrides)
	})
	t.Run("a release recorded before it carried a contact probes with the default one", func(t *testing.T) {
		t.Parallel()
		old := *release7
		old.Carried.Contact = ""
		got, _, err := settings.Resolve(settings.Request{Release: &old, Flags: flagsV2()})
		require.NoError(t, err)
		require.Equal(t, settings.DefaultContact, got.Contact)
	})
}

func TestEveryCarriedSettingTheCallerSetsIsAppliedAndReported(t *testing.T) {
	t.Parallel()
	// Each flag is set to a value unlike both the release's and the flag's default.
	cases := []struct {
		setting       settings.Setting
		set           func(s *settings.Settings)
		release, want string
	}{
		{settings.Fanout, func(s *settings.Settings) { s.Fanout = 7 }, "0", "7"},
		{settings.ClaimLimit, func(s *settings.Settings) { s.ClaimLimit = 9 }, "5", "9"},
		{settings.Concurrency, func(s *settings.Settings) { s.Concurrency = 4 }, "1", "4"},
		{settings.MinSpacing, func(s *settings.Settings) { s.MinSpacing = settings.Duration(13 * time.Minute) }, "10m0s", "13m0s"},
		{settings.RequestTimeout, func(s *settings.Settings) { s.RequestTimeout = settings.Duration(7 * time.Second) }, "10s", "7s"},
		{settings.MaxDuration, func(s *settings.Settings) { s.MaxDuration = settings.Duration(2 * time.Minute) }, "4m0s", "2m0s"},
		{settings.Finish, func(s *settings.Settings) { s.Finish = settings.FinishAdvanceFirst }, settings.FinishTx, settings.FinishAdvanceFirst},
		{settings.Contact, func(s *settings.Settings) { s.Contact = "mailto:probes@example.org" }, "https://release.example/",
			"mailto:probes@example.org"},
	}
	var tested []settings.Setting
	for _, tc := range cases {
		tested = append(tested, tc.setting)
		t.Run(string(tc.setting)+" set by the caller is what the round runs with, and is reported", func(t *testing.T) {
			t.Parallel()
			f := flagsV2()
			tc.set(&f)
			got, overrides, err := settings.Resolve(settings.Request{Release: release7, Flags: f, Changed: only(tc.setting), Bounds: true})
			require.NoError(t, err)
			want := flagsV2()
			want.Carried = release7.Carried
			tc.set(&want)
			id := release7.ID
			want.ReleaseID = &id
			require.Equal(t, want, got, "the flag's value, and the release's for every other carried setting")
			require.Equal(t, []settings.Override{{Setting: tc.setting, Release: tc.release, Round: tc.want}}, overrides)
		})
	}
	var carried []settings.Setting
	for _, f := range settings.CarriedFields() {
		carried = append(carried, f.Name)
	}
	require.ElementsMatch(t, carried, tested, "every setting a release carries has a case here")
}

func TestAReleaseOutOfBoundsIsRefusedUnlessAFlagOverridesIt(t *testing.T) {
	t.Parallel()
	off := *release7
	off.Carried.MinSpacing = 0 // the incident's release: no spacing guard
	_, _, err := settings.Resolve(settings.Request{Release: &off, Flags: flagsV2(), Bounds: true})
	require.EqualError(t, err, "release #7: the active release ships min_spacing 0s, out of bounds: must be between 10m "+
		"(no server is checked twice within 10 minutes) and 7d; record a release within bounds (probectl deploy record) "+
		"or pass min_spacing")
	_, _, err = settings.Resolve(settings.Request{Release: &off, Flags: flagsV2(), Changed: only(settings.MinSpacing), Bounds: true})
	require.NoError(t, err, "the flag's 10m overrides it")
	_, _, err = settings.Resolve(settings.Request{Release: &off, Flags: flagsV2()})
	require.NoError(t, err, "a worker's tick and the incident replay check no bounds")
}

// The lower bounds of the request timeout and the round's budget (1s) came after releases could
// record less: such a release still runs, as the version that recorded it ran it; a flag, and so a
// new release, must meet them.
func TestAReleaseRecordedUnderALaterLowerBoundStillRuns(t *testing.T) {
	t.Parallel()
	old := *release7
	old.Carried.RequestTimeout = settings.Duration(500 * time.Millisecond)
	old.Carried.MaxDuration = settings.Duration(900 * time.Millisecond)
	got, _, err := settings.Resolve(settings.Request{Release: &old, Flags: flagsV2(), Bounds: true})
	require.NoError(t, err)
	require.Equal(t, 500*time.Millisecond, got.RequestTimeout.D())

	flags := flagsV2()
	flags.RequestTimeout = settings.Duration(500 * time.Millisecond)
	_, _, err = settings.Resolve(settings.Request{Release: &old, Flags: flags, Changed: only(settings.RequestTimeout), Bounds: true})
	require.EqualError(t, err, "request_timeout: 500ms is out of bounds: must be between 1s and 1m")
}

func TestEveryFieldOfCarriedHasAColumnAndARow(t *testing.T) {
	t.Parallel()
	cols := settings.Carried{}.Columns()
	require.Len(t, settings.CarriedFields(), len(cols), "one row of Fields per field of Carried")
	for _, f := range settings.CarriedFields() {
		var s settings.Settings
		require.NotPanics(t, func() { f.Value(s) }, f.Name)
	}
	for col := range cols {
		require.NotEmpty(t, col, "every field of Carried names its column (db tag)")
	}
}
