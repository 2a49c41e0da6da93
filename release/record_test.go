package release_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

func TestRecordMakesTheNewReleaseActiveAndRemembersThePreviousOne(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	first := record(t, pool, "v1", sequential, release.WayPrevious)
	second := record(t, pool, "v2", parallel, release.WayPrevious, release.WayFanoutOff)

	h, err := release.ReadHistory(t.Context(), pool, 10)
	require.NoError(t, err)
	require.Len(t, h.Releases, 2)
	require.Equal(t, second.ID, active(t, h).ID)
	require.Equal(t, &first.ID, active(t, h).PreviousID)
	require.Equal(t, []string{"previous", "fanout-off"}, active(t, h).WaysBack)
	require.Equal(t, parallel, active(t, h).Carried)
	require.False(t, h.Releases[1].Active, "the old release is no longer active")

	require.Len(t, h.Events, 2)
	require.Equal(t, release.ActionDeploy, h.Events[0].Action)
	require.Equal(t, second.ID, h.Events[0].ReleaseID)
	require.Equal(t, &first.ID, h.Events[0].FromReleaseID)
	require.Equal(t, "ana", h.Events[0].Actor)
	require.Equal(t, "deploy v2", h.Events[0].Reason)
	require.Nil(t, h.Events[1].FromReleaseID, "the first release replaced nothing")
}

func TestRecordRefusesBadSettingsNamingTheSettingOrTheFlag(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	cases := []struct {
		name   string
		change func(*release.RecordRequest)
		flag   string
	}{
		{"a negative fan-out is refused", func(r *release.RecordRequest) { r.Settings.Fanout = -1 }, "fanout: "},
		{"a zero claim limit is refused", func(r *release.RecordRequest) { r.Settings.ClaimLimit = 0 }, "claim_limit: "},
		{"a zero concurrency is refused", func(r *release.RecordRequest) { r.Settings.Concurrency = 0 }, "concurrency: "},
		{"a negative spacing is refused", func(r *release.RecordRequest) { r.Settings.MinSpacing = settings.Duration(-time.Second) }, "min_spacing: "},
		{"an unknown finish mode is refused", func(r *release.RecordRequest) { r.Settings.Finish = "later" }, "finish: "},
		{"a worst case longer than the in-flight window fails the lease check", func(r *release.RecordRequest) {
			r.Settings.RequestTimeout = settings.Duration(time.Minute)
			r.Settings.MaxDuration = settings.Duration(10 * time.Minute)
		}, "lease: 8 requests × request_timeout 1m0s + max_duration 10m0s + finish 30s = 18m30s does not fit the 15m0s in-flight window"},
		{"an empty version is refused", func(r *release.RecordRequest) { r.Version = "" }, "--version"},
		{"a release without an actor is refused", func(r *release.RecordRequest) { r.Actor = "" }, "--actor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := release.RecordRequest{Version: "v1", Settings: parallel, Actor: "ana"}
			tc.change(&req)
			_, err := release.Record(t.Context(), pool, req)
			// A setting is named as the domain names it (claim_limit); another input as the flag
			// a command says it with.
			said := err.Error()
			if strings.HasPrefix(tc.flag, "--") {
				said = asFlags(err)
			}
			require.Contains(t, said, tc.flag)
			require.Equal(t, exit.Usage, exit.Code(err))
		})
	}
	h, err := release.ReadHistory(t.Context(), pool, 10)
	require.NoError(t, err)
	require.Empty(t, h.Releases, "nothing was recorded")
}

func TestParseWaysAcceptsEitherOrBothInCanonicalOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []release.Way
		err  bool
	}{
		{"", []release.Way{}, false},
		{"none", []release.Way{}, false},
		{"previous", []release.Way{release.WayPrevious}, false},
		{"fanout-off,previous", []release.Way{release.WayPrevious, release.WayFanoutOff}, false},
		{"previous, previous", []release.Way{release.WayPrevious}, false},
		{"patch", nil, true},
	}
	for _, tc := range cases {
		got, err := release.ParseWays(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}
