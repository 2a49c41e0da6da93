package settings

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Duration is a setting's duration: a time.Duration that is seconds (a number) in JSON, as every
// probectl JSON shape says durations, and an interval in PostgreSQL.
type Duration time.Duration

// D is the duration as Go's.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String is Go's form ("10m0s"), as errors and overrides say a duration.
func (d Duration) String() string { return time.Duration(d).String() }

// Seconds is the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// MarshalJSON writes seconds as a number.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Seconds()) }

// UnmarshalJSON reads seconds as a number.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration in seconds: %w", err)
	}
	ns := math.Round(secs * float64(time.Second))
	// float64(math.MaxInt64) is 2^63, one past the largest duration: at or past it would wrap.
	if math.IsNaN(ns) || ns >= float64(math.MaxInt64) || ns < math.MinInt64 {
		return fmt.Errorf("duration in seconds: %v is out of range", secs)
	}
	*d = Duration(ns)
	return nil
}

// ScanInterval reads an interval column (pgx): a release's durations have no months or days.
func (d *Duration) ScanInterval(v pgtype.Interval) error {
	if !v.Valid {
		return fmt.Errorf("cannot scan NULL into a setting's duration")
	}
	*d = Duration(time.Duration(v.Microseconds)*time.Microsecond +
		time.Duration(v.Days)*24*time.Hour + time.Duration(v.Months)*30*24*time.Hour)
	return nil
}

// IntervalValue writes an interval parameter (pgx).
func (d Duration) IntervalValue() (pgtype.Interval, error) {
	return pgtype.Interval{Microseconds: int64(time.Duration(d) / time.Microsecond), Valid: true}, nil
}
