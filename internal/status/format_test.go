package status

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHumanDurationShowsTheTwoLargestUnits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"zero is zero seconds", 0, "0s"},
		{"a fraction of a second keeps one decimal", 168 * time.Millisecond, "0.2s"},
		{"whole seconds have no decimal", 42 * time.Second, "42s"},
		{"ten seconds and more drop the fraction", 43*time.Second + 200*time.Millisecond, "43s"},
		{"minutes show seconds", 3*time.Minute + 5*time.Second, "3m 5s"},
		{"hours show minutes", 2*time.Hour + 3*time.Minute + 59*time.Second, "2h 3m"},
		{"a zero second unit is left out", 40 * time.Minute, "40m"},
		{"a zero minute unit is left out", 3 * time.Hour, "3h"},
		{"days show hours", 50 * time.Hour, "2d 2h"},
		{"a negative duration keeps its sign", -90 * time.Second, "-1m 30s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, HumanDuration(c.d))
		})
	}
}

func TestFormatDurationInChinese(t *testing.T) {
	t.Parallel()
	zh := Units{Day: "天", Hour: "小时", Minute: "分", Second: "秒"}
	require.Equal(t, "40分", FormatDuration(40*time.Minute, zh))
	require.Equal(t, "4分5秒", FormatDuration(4*time.Minute+5*time.Second, zh))
	require.Equal(t, "3小时", FormatDuration(3*time.Hour, zh))
}
