// Package when reads the time flags of probectl (--since, --until, --split-at, --window): an
// absolute RFC 3339 time, or a duration back from now, so that "the last day" is `--since 24h`
// and an incident's boundaries can be pasted from a log.
//
// Durations use Go's syntax ("90m", "24h", "1h30m", "1.5h") and may start with a whole number
// of weeks and then of days ("2w", "7d", "1w3d", "1d12h"); a day is 24 hours and a week 7 days,
// whatever the calendar says. "now" means now.
// Negative durations are refused: a duration always points back.
package when

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is the length of the "d" unit, Week of the "w" unit.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// Parse reads s as an RFC 3339 time (an offset is required; fractional seconds are kept) or as a
// duration back from now. The result is in UTC.
func Parse(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return now.UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		if looksLikeTime(s) {
			return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-10-07T22:13:24Z (the offset is required)", s)
		}
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-10-07T22:13:24Z) nor a duration back from now (90m, 24h, 7d): %w", s, err)
	}
	return now.Add(-d).UTC(), nil
}

// ParseDuration reads a non-negative duration in Go's syntax, optionally starting with a whole
// number of weeks and then of days: "10m", "90s", "7d", "1d12h", "2w", "1w3d".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	orig := s
	var whole time.Duration
	for _, u := range []struct {
		letter byte
		name   string
		size   time.Duration
	}{{'w', "weeks", Week}, {'d', "days", Day}} {
		i := strings.IndexByte(s, u.letter)
		if i <= 0 || strings.Trim(s[:i], "0123456789.") != "" {
			continue
		}
		n, err := strconv.ParseUint(s[:i], 10, 63)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %s must be a whole number before the %c, as in 7d, 1d12h or 2w", orig, u.name, u.letter)
		}
		if n > uint64((math.MaxInt64-whole)/u.size) {
			return 0, fmt.Errorf("duration %q is too long", orig)
		}
		whole, s = whole+time.Duration(n)*u.size, s[i+1:]
		if s == "" {
			return whole, nil
		}
		if s[0] == '-' || s[0] == '+' {
			return 0, fmt.Errorf("duration %q: nothing signed may follow the %s", orig, u.name)
		}
	}
	rest, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", orig, unquote(err))
	}
	if rest < 0 {
		return 0, fmt.Errorf("duration %q is negative", orig)
	}
	if whole > math.MaxInt64-rest {
		return 0, fmt.Errorf("duration %q is too long", orig)
	}
	return whole + rest, nil
}

// unquote drops the input time.ParseDuration repeats in its errors ("time: invalid duration
// \"x\""), which ours already names.
func unquote(err error) error {
	msg := strings.TrimPrefix(err.Error(), "time: ")
	if i := strings.LastIndex(msg, " in duration "); i >= 0 {
		msg = msg[:i]
	} else if strings.HasPrefix(msg, "invalid duration ") {
		msg = "invalid duration"
	}
	return errors.New(msg)
}

// looksLikeTime spots an attempt at an absolute time ("2026-10-07", "2026-10-07T22:13:24"), so its
// error can say what is missing instead of talking about durations.
func looksLikeTime(s string) bool {
	return len(s) >= 10 && s[4] == '-' && s[7] == '-'
}
