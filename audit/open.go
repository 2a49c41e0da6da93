package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// InFlightWindow is how long a job may stay open before it is stale: the claim treats an older
// open job as abandoned, so its server can be claimed again. It is the claim's own window.
const InFlightWindow = queries.InFlightWindow

// OpenParams tune the open-jobs audit; the zero value is the documented behaviour.
type OpenParams struct {
	// InFlight overrides InFlightWindow (zero keeps it).
	InFlight time.Duration
	// Now overrides the clock jobs are aged against (zero: the database's now()).
	Now time.Time
}

// OpenJob is a job with no finish time, aged at a moment: what `probectl audit open`,
// `probectl status` and the status page show of it.
type OpenJob struct {
	queries.OpenJob
	// Age is how long the job has been open at the report's moment.
	Age time.Duration
	// Stale: open for at least the in-flight window. A probe died between claim and finish; no
	// other process checks the server until the claim closes the job as abandoned.
	Stale bool
}

// IsStale is the one staleness rule: a job open for at least the in-flight window is stale,
// from the same instant the claim would close it as abandoned (requested_at <= now - window).
func IsStale(age, inFlight time.Duration) bool { return age >= inFlight }

// EachOpenJob calls fn with every open job, oldest first, aged at now against inFlight. It keeps
// nothing, so a caller that shows a few may still count them all.
func EachOpenJob(ctx context.Context, db queries.DBTX, now time.Time, inFlight time.Duration, fn func(OpenJob) error) error {
	return queries.OpenJobs(ctx, db, func(row queries.OpenJob) error {
		age := now.Sub(row.RequestedAt)
		return fn(OpenJob{OpenJob: row, Age: age, Stale: IsStale(age, inFlight)})
	})
}

// OpenReport lists the open jobs, oldest first.
type OpenReport struct {
	Now      time.Time
	InFlight time.Duration
	Jobs     []OpenJob
}

// Stale is the number of open jobs past the in-flight window.
func (r OpenReport) Stale() int {
	n := 0
	for _, j := range r.Jobs {
		if j.Stale {
			n++
		}
	}
	return n
}

// Open lists the open jobs in its own READ ONLY, REPEATABLE READ transaction.
func Open(ctx context.Context, db queries.DB, p OpenParams) (*OpenReport, error) {
	var r *OpenReport
	err := inReadOnlyTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		r, err = OpenTx(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// OpenTx lists the open jobs inside the caller's READ ONLY transaction. It sets the audits'
// planner settings for the rest of tx (see DuplicatesTx).
func OpenTx(ctx context.Context, tx pgx.Tx, p OpenParams) (*OpenReport, error) {
	if err := enter(ctx, tx); err != nil {
		return nil, err
	}
	if p.InFlight < 0 {
		return nil, paramError(InputInFlight, "must be positive, got %s", p.InFlight)
	}
	if p.InFlight == 0 {
		p.InFlight = InFlightWindow
	}
	now, err := resolveUntil(ctx, tx, p.Now)
	if err != nil {
		return nil, err
	}
	r := &OpenReport{Now: now, InFlight: p.InFlight, Jobs: []OpenJob{}}
	err = EachOpenJob(ctx, tx, now, p.InFlight, func(j OpenJob) error {
		r.Jobs = append(r.Jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

type openJobJSON struct {
	JobID        int64     `json:"job_id"`
	ServerID     int64     `json:"server_id"`
	Slug         string    `json:"slug"`
	RoundID      *int64    `json:"round_id"`
	RoundTrigger *string   `json:"round_trigger"`
	RoundVersion *string   `json:"round_version"`
	Invocation   *int32    `json:"invocation"`
	Reason       string    `json:"reason"`
	RequestedAt  time.Time `json:"requested_at"`
	AgeSeconds   Seconds   `json:"age_seconds"`
	Stale        bool      `json:"stale"`
}

type openJSON struct {
	Now             time.Time     `json:"now"`
	InFlightSeconds Seconds       `json:"in_flight_seconds"`
	OpenCount       int           `json:"open_count"`
	StaleCount      int           `json:"stale_count"`
	Jobs            []openJobJSON `json:"jobs"`
}

// MarshalJSON writes the documented shape (docs/audit.md).
func (r OpenReport) MarshalJSON() ([]byte, error) {
	out := openJSON{Now: r.Now.UTC(), InFlightSeconds: Seconds(r.InFlight), OpenCount: len(r.Jobs),
		StaleCount: r.Stale(), Jobs: make([]openJobJSON, 0, len(r.Jobs))}
	for _, j := range r.Jobs {
		out.Jobs = append(out.Jobs, openJobJSON{JobID: j.JobID, ServerID: j.ServerID, Slug: j.Slug,
			RoundID: j.RoundID, RoundTrigger: j.RoundTrigger, RoundVersion: j.RoundVersion,
			Invocation: j.Invocation, Reason: j.Reason, RequestedAt: j.RequestedAt,
			AgeSeconds: Seconds(j.Age), Stale: j.Stale})
	}
	return json.Marshal(out)
}
