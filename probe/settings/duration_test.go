package settings

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestADurationIsSecondsInJSONBothWays(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, 1500 * time.Millisecond, 10 * time.Minute, 7 * 24 * time.Hour} {
		b, err := json.Marshal(Duration(d))
		require.NoError(t, err)
		want, _ := json.Marshal(d.Seconds())
		require.Equal(t, string(want), string(b), "the number a float64 of seconds always was")
		var back Duration
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, Duration(d), back)
	}
}

func TestADurationTooLongForGoIsRefusedNotWrapped(t *testing.T) {
	t.Parallel()
	var d Duration
	require.ErrorContains(t, json.Unmarshal([]byte("1e12"), &d), "out of range", "10^12 s is past 292 years")
	require.Error(t, json.Unmarshal([]byte(`"10m"`), &d), "seconds are a number")
	require.ErrorContains(t, json.Unmarshal([]byte("9223372036.854775807"), &d), "out of range",
		"the largest duration's seconds round to 2^63 ns, one past it: refused, not wrapped negative")
	require.ErrorContains(t, json.Unmarshal([]byte("-9223372037"), &d), "out of range")
	require.NoError(t, json.Unmarshal([]byte("9223372035"), &d))
	require.Positive(t, d)
}
