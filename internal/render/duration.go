package render

import (
	"strconv"
	"strings"
	"time"
)

// DurationUnits name the units of a duration in one language.
type DurationUnits struct{ Day, Hour, Minute, Second string }

// English are the units of Duration, which every duration flag reads back.
var English = DurationUnits{Day: "d", Hour: "h", Minute: "m", Second: "s"}

// Duration writes d the one way tables, text and the pages show a duration: under a minute in
// seconds with up to three decimals ("0.046s", "1.061s", "2s"), from a minute on in whole units,
// largest first, zeros left out ("10m", "13m35s", "12h", "1d6h"), truncated toward zero as the
// JSON's seconds are (audit.FormatSeconds), so a table never shows more than JSON says. What it
// writes, every duration flag reads back. JSON keeps seconds as numbers.
func Duration(d time.Duration) string { return DurationIn(d, English) }

// DurationIn is Duration with another language's units ("3分52秒" on the Chinese page).
func DurationIn(d time.Duration, u DurationUnits) string {
	if d < 0 {
		return "-" + DurationIn(-d, u)
	}
	if d < time.Minute {
		s := strconv.FormatFloat(d.Truncate(time.Millisecond).Seconds(), 'f', 3, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s + u.Second
	}
	d = d.Truncate(time.Second)
	var b strings.Builder
	for _, p := range []struct {
		size time.Duration
		unit string
	}{{24 * time.Hour, u.Day}, {time.Hour, u.Hour}, {time.Minute, u.Minute}, {time.Second, u.Second}} {
		if n := d / p.size; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + p.unit)
			d -= n * p.size
		}
	}
	return b.String()
}
