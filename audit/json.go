package audit

import (
	"encoding/json"
	"fmt"
	"time"
)

// Seconds is a duration that marshals to JSON as seconds with millisecond precision (three
// decimals), truncated toward zero so that a gap just under the window never reads as the window.
type Seconds time.Duration

// MarshalJSON implements json.Marshaler.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(FormatSeconds(time.Duration(s))), nil
}

// FormatSeconds writes d as seconds with three decimals, truncated toward zero: "0.168",
// "-2.500", "600.000". Tables and CSV use it too, so every output agrees.
func FormatSeconds(d time.Duration) string {
	ms := int64(d / time.Millisecond) // integer division truncates toward zero
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Sprintf("%s%d.%03d", sign, ms/1000, ms%1000)
}

func secondsPtr(d *time.Duration) *Seconds {
	if d == nil {
		return nil
	}
	s := Seconds(*d)
	return &s
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type populationJSON struct {
	Jobs    int64     `json:"jobs"`
	Servers int64     `json:"servers"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
}

type pairJSON struct {
	ServerID              int64      `json:"server_id"`
	Slug                  string     `json:"slug"`
	FirstJobID            int64      `json:"first_job_id"`
	SecondJobID           int64      `json:"second_job_id"`
	FirstRequestedAt      time.Time  `json:"first_requested_at"`
	FirstFinishedAt       *time.Time `json:"first_finished_at"`
	SecondRequestedAt     time.Time  `json:"second_requested_at"`
	RequestGapSeconds     Seconds    `json:"request_gap_seconds"`
	GapAfterFinishSeconds *Seconds   `json:"gap_after_finish_seconds"`
	SecondReason          string     `json:"second_reason"`
	Class                 Class      `json:"class"`
	Explained             bool       `json:"explained"`
	FirstBeforeSince      bool       `json:"first_before_since"`
	// FailoverAt: a failover pair's, when its new timeline was first seen; absent otherwise.
	FailoverAt *time.Time `json:"failover_at,omitempty"`
}

type closestJSON struct {
	ServerID          int64     `json:"server_id"`
	Slug              string    `json:"slug"`
	FirstJobID        int64     `json:"first_job_id"`
	SecondJobID       int64     `json:"second_job_id"`
	FirstRequestedAt  time.Time `json:"first_requested_at"`
	SecondRequestedAt time.Time `json:"second_requested_at"`
	GapSeconds        Seconds   `json:"gap_seconds"`
}

type periodJSON struct {
	Since       time.Time `json:"since"`
	Until       time.Time `json:"until"`
	Jobs        int64     `json:"jobs"`
	Servers     int64     `json:"servers"`
	Pairs       int64     `json:"pairs"`
	Unexplained int64     `json:"unexplained"`
}

type duplicatesJSON struct {
	Population        populationJSON `json:"population"`
	WindowSeconds     Seconds        `json:"window_seconds"`
	DuplicateCount    int            `json:"duplicate_count"`
	UnexplainedCount  int            `json:"unexplained_count"`
	ClassCounts       map[Class]int  `json:"class_counts"`
	ClosestGapSeconds *Seconds       `json:"closest_gap_seconds"`
	ClosestPair       *closestJSON   `json:"closest_pair"`
	Duplicates        []pairJSON     `json:"duplicates"`
	Periods           []periodJSON   `json:"periods"`
}

// MarshalJSON writes the documented shape (docs/audit.md): snake_case keys, RFC 3339 UTC times,
// gaps in seconds with three decimals, null for a missing finish or closest pair.
func (r DuplicatesReport) MarshalJSON() ([]byte, error) {
	out := duplicatesJSON{
		Population: populationJSON{Jobs: r.Population.Jobs, Servers: r.Population.Servers,
			Since: r.Population.Since.UTC(), Until: r.Population.Until.UTC()},
		WindowSeconds:    Seconds(r.Window),
		DuplicateCount:   len(r.Pairs),
		UnexplainedCount: r.Unexplained(),
		ClassCounts:      map[Class]int{},
		Duplicates:       make([]pairJSON, 0, len(r.Pairs)),
		Periods:          make([]periodJSON, 0, len(r.Periods)),
	}
	for _, c := range Classes {
		out.ClassCounts[c] = r.Count(c)
	}
	if c := r.Closest; c != nil {
		gap := Seconds(c.Gap)
		out.ClosestGapSeconds = &gap
		out.ClosestPair = &closestJSON{ServerID: c.ServerID, Slug: c.Slug, FirstJobID: c.FirstJobID,
			SecondJobID: c.SecondJobID, FirstRequestedAt: c.FirstRequestedAt.UTC(),
			SecondRequestedAt: c.SecondRequestedAt.UTC(), GapSeconds: gap}
	}
	for _, p := range r.Pairs {
		out.Duplicates = append(out.Duplicates, pairJSON{
			ServerID: p.ServerID, Slug: p.Slug, FirstJobID: p.FirstJobID, SecondJobID: p.SecondJobID,
			FirstRequestedAt: p.FirstRequestedAt.UTC(), FirstFinishedAt: utcPtr(p.FirstFinishedAt),
			SecondRequestedAt: p.SecondRequestedAt.UTC(), RequestGapSeconds: Seconds(p.RequestGap),
			GapAfterFinishSeconds: secondsPtr(p.GapAfterFinish), SecondReason: p.SecondReason,
			Class: p.Class, Explained: p.Explained(), FirstBeforeSince: p.FirstBeforeSince,
			FailoverAt: utcPtr(p.FailoverAt),
		})
	}
	for _, p := range r.Periods {
		out.Periods = append(out.Periods, periodJSON{Since: p.Since.UTC(), Until: p.Until.UTC(),
			Jobs: p.Jobs, Servers: p.Servers, Pairs: p.Pairs, Unexplained: p.Unexplained})
	}
	return json.Marshal(out)
}
