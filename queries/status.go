package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The Status* wrappers are what internal/status reads for `probectl status` and the status page.
// They only read; the caller runs them in one READ ONLY transaction so the figures agree.

// StatusNow returns now, or the database's now() when now is nil.
func StatusNow(ctx context.Context, db DBTX, now *time.Time) (time.Time, error) {
	var at time.Time
	if err := db.QueryRow(ctx, SQL("StatusNow"), now).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("read the time: %w", err)
	}
	return at, nil
}

// StatusDue is how many active servers are due at a time.
type StatusDue struct {
	Count int
	// Held are the due servers that have an open job within the in-flight window: a round is
	// checking them.
	Held int
	// Oldest is the due server that has waited longest; nil when none is due.
	Oldest *DueServer
}

// DueServer is one due server.
type DueServer struct {
	ServerID    int64
	Slug        string
	NextCheckAt time.Time
}

// StatusDueServers counts the servers due at now.
func StatusDueServers(ctx context.Context, db DBTX, now time.Time, inFlight time.Duration) (StatusDue, error) {
	var d StatusDue
	var id *int64
	var slug *string
	var next *time.Time
	if err := db.QueryRow(ctx, SQL("StatusDue"), now, inFlight.Seconds()).Scan(&d.Count, &d.Held, &id, &slug, &next); err != nil {
		return StatusDue{}, fmt.Errorf("count due servers: %w", err)
	}
	if id != nil {
		d.Oldest = &DueServer{ServerID: *id, Slug: *slug, NextCheckAt: *next}
	}
	return d, nil
}

// StatusOpenJobCounts counts every open job and those requested at least inFlight before now.
func StatusOpenJobCounts(ctx context.Context, db DBTX, now time.Time, inFlight time.Duration) (open, stale int, err error) {
	if err := db.QueryRow(ctx, SQL("StatusOpenJobCounts"), now, inFlight.Seconds()).Scan(&open, &stale); err != nil {
		return 0, 0, fmt.Errorf("count open jobs: %w", err)
	}
	return open, stale, nil
}

// OpenJob is a job with no finish yet, and its server.
type OpenJob struct {
	JobID       int64
	ServerID    int64
	Slug        string
	RoundID     *int64
	Invocation  *int
	Reason      string
	RequestedAt time.Time
	NextCheckAt time.Time
	// Advanced says the server's next check lies after the job's request: the probe advanced it
	// and has not finished the job.
	Advanced bool
}

// StatusOpenJobs lists up to limit open jobs, oldest first.
func StatusOpenJobs(ctx context.Context, db DBTX, limit int) ([]OpenJob, error) {
	rows, err := db.Query(ctx, SQL("StatusOpenJobs"), limit)
	if err != nil {
		return nil, fmt.Errorf("list open jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OpenJob, error) {
		var j OpenJob
		err := row.Scan(&j.JobID, &j.ServerID, &j.Slug, &j.RoundID, &j.Invocation, &j.Reason,
			&j.RequestedAt, &j.NextCheckAt, &j.Advanced)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("list open jobs: %w", err)
	}
	return out, nil
}

// RecentRound is a round and what it left in the database.
type RecentRound struct {
	ID                              int64
	Trigger                         string
	Version                         string
	Fanout, ClaimLimit, Concurrency int
	StartedAt                       time.Time
	FinishedAt                      *time.Time
	Jobs, Runs, Servers             int
	// Failures are jobs whose outcome is failed or error.
	Failures  int
	Abandoned int
	OpenJobs  int
	// HeartbeatAt is the round's last heartbeat (nil for a round of a binary from before them);
	// State is running, finished or dead (RoundRunning, RoundFinished, RoundDead).
	HeartbeatAt *time.Time
	State       string
}

// StatusRecentRounds lists the last limit rounds, newest first.
func StatusRecentRounds(ctx context.Context, db DBTX, limit int, now time.Time) ([]RecentRound, error) {
	rows, err := db.Query(ctx, SQL("StatusRecentRounds"), limit, now, RoundDeadAfter.Seconds(), RoundDeadWithoutHeartbeat.Seconds())
	if err != nil {
		return nil, fmt.Errorf("list recent rounds: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecentRound, error) {
		var r RecentRound
		err := row.Scan(&r.ID, &r.Trigger, &r.Version, &r.Fanout, &r.ClaimLimit, &r.Concurrency,
			&r.StartedAt, &r.FinishedAt, &r.Jobs, &r.Runs, &r.Servers, &r.Failures, &r.Abandoned, &r.OpenJobs, &r.HeartbeatAt, &r.State)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("list recent rounds: %w", err)
	}
	return out, nil
}

// StatusRoundsTotal counts every round ever recorded.
func StatusRoundsTotal(ctx context.Context, db DBTX) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, SQL("StatusRoundsTotal")).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rounds: %w", err)
	}
	return n, nil
}
