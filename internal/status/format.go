package status

import (
	"fmt"
	"time"
)

// HumanDuration writes a duration the way a person reads an age on a terminal or the English page:
// the two largest units, "42s", "3m 5s", "2h 3m", "3d 4h", the second left out when it is zero
// ("40m", "3h"); below ten seconds with one decimal when it is not a whole number of seconds
// ("0.2s", "4.5s").
func HumanDuration(d time.Duration) string {
	return formatDuration(d, Units{Day: "d", Hour: "h", Minute: "m", Second: "s", Sep: " "})
}

// Units name the parts of a duration in one language.
type Units struct {
	Day, Hour, Minute, Second string
	// Sep goes between the two parts ("3m 5s" in English, "3分5秒" in Chinese).
	Sep string
}

// FormatDuration writes d with the given units, as HumanDuration does in English.
func FormatDuration(d time.Duration, u Units) string { return formatDuration(d, u) }

func formatDuration(d time.Duration, u Units) string {
	if d < 0 {
		return "-" + formatDuration(-d, u)
	}
	if d < time.Minute {
		if d%time.Second == 0 || d >= 10*time.Second {
			return fmt.Sprintf("%d%s", int(d/time.Second), u.Second)
		}
		return fmt.Sprintf("%.1f%s", d.Seconds(), u.Second)
	}
	d = d.Truncate(time.Second)
	days, rest := d/(24*time.Hour), d%(24*time.Hour)
	hours, rest := rest/time.Hour, rest%time.Hour
	mins, secs := rest/time.Minute, (rest%time.Minute)/time.Second
	switch {
	case days > 0:
		return twoUnits(int64(days), u.Day, int64(hours), u.Hour, u.Sep)
	case hours > 0:
		return twoUnits(int64(hours), u.Hour, int64(mins), u.Minute, u.Sep)
	default:
		return twoUnits(int64(mins), u.Minute, int64(secs), u.Second, u.Sep)
	}
}

func twoUnits(a int64, aUnit string, b int64, bUnit, sep string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, aUnit)
	}
	return fmt.Sprintf("%d%s%s%d%s", a, aUnit, sep, b, bUnit)
}
