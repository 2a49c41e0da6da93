package when_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/when"
)

var now = time.Date(2026, 10, 8, 13, 15, 31, 0, time.FixedZone("CEST", 2*3600))

func TestParseReadsTimesAndDurationsBackFromNow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     time.Time
	}{
		{"an RFC 3339 time in UTC", "2026-10-07T22:13:24Z", time.Date(2026, 10, 7, 22, 13, 24, 0, time.UTC)},
		{"an RFC 3339 time with an offset becomes UTC", "2026-10-08T00:13:24+02:00", time.Date(2026, 10, 7, 22, 13, 24, 0, time.UTC)},
		{"fractional seconds are kept", "2026-10-07T20:55:00.168Z", time.Date(2026, 10, 7, 20, 55, 0, 168e6, time.UTC)},
		{"minutes back", "90m", now.Add(-90 * time.Minute).UTC()},
		{"hours back", "24h", now.Add(-24 * time.Hour).UTC()},
		{"combined units back", "1h30m", now.Add(-90 * time.Minute).UTC()},
		{"days back", "7d", now.Add(-7 * 24 * time.Hour).UTC()},
		{"days and hours back", "1d12h", now.Add(-36 * time.Hour).UTC()},
		{"zero is now", "0s", now.UTC()},
		{"the word now", "now", now.UTC()},
		{"surrounding blanks are ignored", " 24h ", now.Add(-24 * time.Hour).UTC()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := when.Parse(tc.in, now)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, time.UTC, got.Location())
		})
	}
}

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"an empty value", "", `"" is neither an RFC 3339 time`},
		{"a word", "yesterday", `"yesterday" is neither an RFC 3339 time (2026-10-07T22:13:24Z) nor a duration back from now (90m, 24h, 7d): duration "yesterday": invalid duration`},
		{"a time without an offset", "2026-10-07T22:13:24", `"2026-10-07T22:13:24" is not an RFC 3339 time such as 2026-10-07T22:13:24Z (the offset is required)`},
		{"a date alone", "2026-10-07", `"2026-10-07" is not an RFC 3339 time`},
		{"a negative duration", "-5m", `duration "-5m" is negative`},
		{"fractional days", "1.5d", `days must be a whole number`},
		{"a sign after the days", "1d-5m", `nothing signed may follow the days`},
		{"a unit Go does not know", "2y", `unknown unit "y"`},
		{"weeks after days", "1d2w", `unknown unit "w"`},
		{"fractional weeks", "1.5w", `weeks must be a whole number`},
		{"more weeks than a duration holds", "20000w", `is too long`},
		{"more days than a duration holds", "200000d", `is too long`},
		{"days that overflow with the rest", "106751d23h47m17s", `is too long`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := when.Parse(tc.in, now)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseDurationReadsDaysAndWeeks(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"10m": 10 * time.Minute, "7d": 7 * when.Day, "1d0h": when.Day, "0d90s": 90 * time.Second, "1.5h": 90 * time.Minute,
		"2w": 14 * when.Day, "1w3d": 10 * when.Day, "1w12h": 7*when.Day + 12*time.Hour, "0w1d": when.Day,
	} {
		got, err := when.ParseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}

// FuzzParse: whatever the input, Parse never panics; what it accepts is UTC and is either the
// RFC 3339 time it read or exactly the duration ParseDuration reads, back from now; what it refuses
// it names in the error.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2026-10-07T22:13:24Z", "2026-10-08T00:13:24.5+02:00", "90m", "24h", "7d",
		"1d12h", "now", "-5m", "1.5d", "2026-10-07", "", "d", "0d", "9223372036854775807ns", "106751d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := when.Parse(s, now)
		if err != nil {
			if !strings.Contains(err.Error(), `"`) {
				t.Fatalf("error %q does not quote the input", err)
			}
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("Parse(%q) = %v, not in UTC", s, got)
		}
		trimmed := strings.TrimSpace(s)
		if abs, perr := time.Parse(time.RFC3339Nano, trimmed); perr == nil {
			if !abs.Equal(got) {
				t.Fatalf("Parse(%q) = %v, want the time %v", s, got, abs)
			}
			return
		}
		if trimmed == "now" {
			return
		}
		d, derr := when.ParseDuration(s)
		if derr != nil {
			t.Fatalf("Parse(%q) accepted what is neither a time nor a duration: %v", s, derr)
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		if want := now.Add(-d).UTC(); !want.Equal(got) {
			t.Fatalf("Parse(%q) = %v, want %v back from now = %v", s, got, d, want)
		}
	})
}
