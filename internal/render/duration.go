package render

import (
	"strconv"
	"strings"
	"time"
)

// Duration writes d the one way tables and messages show a duration: under a minute in seconds
// with up to three decimals ("0.046s", "1.061s", "2s"), from a minute on in whole units, largest
// first, zeros left out ("10m", "13m35s", "12h", "1d6h"), truncated toward zero as the JSON's
// seconds are (audit.FormatSeconds), so a table never shows more than JSON says. What it writes,
// every duration flag reads back.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	if d < time.Minute {
		s := strconv.FormatFloat(d.Truncate(time.Millisecond).Seconds(), 'f', 3, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s + "s"
	}
	d = d.Truncate(time.Second)
	var b strings.Builder
	for _, u := range []struct {
		size time.Duration
		unit string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.size; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.unit)
			d -= n * u.size
		}
	}
	return b.String()
}
