package settings

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
)

func TestTheLeaseCheckCountsTheFinishInAJobsWorstCase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                        string
		requestTimeout, maxDuration time.Duration
		want                        string // "" when the settings fit
	}{
		{"the defaults fit with room to spare", 10 * time.Second, 4 * time.Minute, ""},
		{"a check, the round and the finish that fill the window exactly fit", 90 * time.Second, 2*time.Minute + 30*time.Second, ""},
		{"a check and the round that fit only without the finish do not fit", 90 * time.Second, 2*time.Minute + 45*time.Second,
			"lease: 8 requests × request_timeout 1m30s + max_duration 2m45s + finish 30s = 15m15s does not fit the 15m0s " +
				"in-flight window; lower request_timeout or max_duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := Default()
			s.RequestTimeout, s.MaxDuration = Duration(tc.requestTimeout), Duration(tc.maxDuration)
			err := s.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestTheLeaseCheckRefusesATimeoutThatWouldWrapAround(t *testing.T) {
	t.Parallel()
	s := Default()
	// 8 × 2^61 ns is 2^64 ns: wrapped, the worst case would look like the round's budget alone.
	s.RequestTimeout = 2305843009213693952
	require.ErrorContains(t, s.Validate(), "does not fit the 15m0s in-flight window")
	require.Equal(t, time.Duration(math.MaxInt64), s.JobWorstCase())
}

func TestASettingsErrorNamesTheSettingAndLetsTheCallerSayItsFlag(t *testing.T) {
	t.Parallel()
	s := Default()
	s.ClaimLimit, s.RequestTimeout, s.MaxDuration = 0, Duration(time.Minute), Duration(10*time.Minute)
	err := s.Validate()
	require.EqualError(t, err, "claim_limit: must be at least 1, got 0\n"+
		"lease: 8 requests × request_timeout 1m0s + max_duration 10m0s + finish 30s = 18m30s does not fit the 15m0s "+
		"in-flight window; lower request_timeout or max_duration")
	var bad *Error
	require.ErrorAs(t, err, &bad)
	require.Equal(t, ClaimLimit, bad.Setting)
	require.Equal(t, exit.Usage, exit.Code(err))
	flag := func(n input.Name) string { return "--" + strings.ReplaceAll(string(n), "_", "-") }
	said, ok := input.Say(bad, flag)
	require.True(t, ok)
	require.Equal(t, "--claim-limit: must be at least 1, got 0", said)
	lease := err.(interface{ Unwrap() []error }).Unwrap()[1].(*Error)
	said, _ = input.Say(lease, flag)
	require.Equal(t, "lease: 8 requests × --request-timeout 1m0s + --max-duration 10m0s + finish 30s = 18m30s does not fit "+
		"the 15m0s in-flight window; lower --request-timeout or --max-duration", said)
}
