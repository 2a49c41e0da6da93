package render

import (
	"fmt"
	"time"
)

// LoadZone reads a --tz / PROBECTL_TZ value: an IANA name (Europe/Berlin), UTC or Local. The
// empty string is UTC, the incident responder's habit.
func LoadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not a time zone (an IANA name such as Europe/Berlin, UTC or Local)", name)
	}
	return loc, nil
}

// zone is where tables and text show times: UTC unless --tz or PROBECTL_TZ chose another. JSON and
// CSV never use it; they stay UTC.
func (s *Streams) zone() *time.Location {
	if s.Zone == nil {
		return time.UTC
	}
	return s.Zone
}

// ZoneName names the zone tables show times in ("UTC", "Europe/Berlin").
func (s *Streams) ZoneName() string { return s.zone().String() }

// TimeHeader is a table column's heading that names the zone its times are in: "STARTED (UTC)".
func (s *Streams) TimeHeader(label string) string { return label + " (" + s.ZoneName() + ")" }

// Time formats a moment for a table or text output: RFC 3339 in the chosen zone (Z in UTC, the
// offset elsewhere, so that a pasted value is never ambiguous).
func (s *Streams) Time(t time.Time) string { return t.In(s.zone()).Format(time.RFC3339) }

// TimeNano is Time with the fractional seconds, for outputs that order events closer than a second.
func (s *Streams) TimeNano(t time.Time) string { return t.In(s.zone()).Format(time.RFC3339Nano) }

// Clock is the time of day in the chosen zone, for tables whose heading names the zone.
func (s *Streams) Clock(t time.Time) string { return t.In(s.zone()).Format("15:04:05") }

// TimeMillis is Time to the millisecond, as audits show the gaps they judge.
func (s *Streams) TimeMillis(t time.Time) string {
	return t.In(s.zone()).Format("2006-01-02T15:04:05.000Z07:00")
}

// Date is the day of t in the chosen zone ("2026-12-01"), for a certificate's expiry.
func (s *Streams) Date(t time.Time) string { return t.In(s.zone()).Format(time.DateOnly) }
