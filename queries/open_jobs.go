package queries

import (
	"context"
	"fmt"
	"time"
)

// OpenJob is a job with no finish yet, with its server and its round: the one row every view of
// open jobs reads (status, the status page, audit open).
type OpenJob struct {
	JobID        int64   `db:"job_id"`
	ServerID     int64   `db:"server_id"`
	Slug         string  `db:"slug"`
	RoundID      *int64  `db:"round_id"`
	RoundTrigger *string `db:"round_trigger"`
	RoundVersion *string `db:"round_version"`
	// Invocation is the round's invocation that claimed the job (nil: claimed outside a round).
	Invocation  *int32    `db:"invocation"`
	Reason      string    `db:"reason"`
	RequestedAt time.Time `db:"requested_at"`
	NextCheckAt time.Time `db:"next_check_at"`
	// Leased says the server's next check is the job's lease end (requested_at + the in-flight
	// window), where the claim put it: the job is in flight under its lease.
	Leased bool `db:"leased"`
	// Advanced says the server's next check moved past the job's request to anything but the lease
	// end: the probe advanced it and has not finished the job (it died between its two writes).
	Advanced bool `db:"advanced"`
}

// OpenJobs calls fn for every open job, oldest first, as the rows arrive.
func OpenJobs(ctx context.Context, db DBTX, fn func(OpenJob) error) error {
	if err := eachRow(ctx, db, "OpenJobs", fn, InFlightWindow); err != nil {
		return fmt.Errorf("read open jobs: %w", err)
	}
	return nil
}
