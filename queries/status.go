package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The Status* wrappers are what internal/status reads for `probectl status` and the status page
// (the open jobs come from OpenJobs). They only read; the caller runs them in one READ ONLY
// transaction so the figures agree.

// StatusNow returns now, or the database's now() when now is nil.
func StatusNow(ctx context.Context, db DBTX, now *time.Time) (time.Time, error) {
	rows, err := db.Query(ctx, SQL("StatusNow"), now)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the time: %w", err)
	}
	at, err := pgx.CollectOneRow(rows, pgx.RowTo[time.Time])
	if err != nil {
		return time.Time{}, fmt.Errorf("read the time: %w", err)
	}
	return at, nil
}

// StatusDue is how many active servers are due at a time.
type StatusDue struct {
	Count int `db:"count"`
	// Held are the due servers that have an open job within the in-flight window: a round is
	// checking them.
	Held int `db:"held"`
	// Oldest is the due server that has waited longest; nil when none is due.
	Oldest *DueServer `db:"-"`
}

// DueServer is one due server.
type DueServer struct {
	ServerID    int64     `db:"server_id"`
	Slug        string    `db:"slug"`
	NextCheckAt time.Time `db:"next_check_at"`
}

// StatusDueServers counts the servers due at now.
func StatusDueServers(ctx context.Context, db DBTX, now time.Time, inFlight time.Duration) (StatusDue, error) {
	rows, err := db.Query(ctx, SQL("StatusDue"), now, inFlight)
	if err != nil {
		return StatusDue{}, fmt.Errorf("count due servers: %w", err)
	}
	d, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[StatusDue])
	if err != nil {
		return StatusDue{}, fmt.Errorf("count due servers: %w", err)
	}
	if d.Oldest, err = optionalRow[DueServer](ctx, db, "StatusOldestDue", now); err != nil {
		return StatusDue{}, fmt.Errorf("find the oldest due server: %w", err)
	}
	return d, nil
}

// RecentRound is a round and what it left in the database.
type RecentRound struct {
	ID          int64      `db:"id"`
	Trigger     string     `db:"trigger"`
	Version     string     `db:"version"`
	Fanout      int        `db:"fanout"`
	ClaimLimit  int        `db:"claim_limit"`
	Concurrency int        `db:"concurrency"`
	StartedAt   time.Time  `db:"started_at"`
	FinishedAt  *time.Time `db:"finished_at"`
	Jobs        int        `db:"jobs"`
	Runs        int        `db:"runs"`
	Servers     int        `db:"servers"`
	// Failures are jobs whose outcome is failed or error.
	Failures  int `db:"failures"`
	Abandoned int `db:"abandoned"`
	// Lost are the abandoned jobs without a run: checks the round claimed and nothing stored.
	Lost     int `db:"lost"`
	OpenJobs int `db:"open_jobs"`
	// HeartbeatAt is the round's last heartbeat (nil for a round of a binary from before them);
	// State is running, finished, dead or recovered (RoundRunning, RoundFinished, RoundDead,
	// RoundRecovered).
	HeartbeatAt *time.Time `db:"heartbeat_at"`
	State       string     `db:"state"`
}

// StatusRecentRounds lists the last limit rounds, newest first.
func StatusRecentRounds(ctx context.Context, db DBTX, limit int, now time.Time) ([]RecentRound, error) {
	rows, err := db.Query(ctx, SQL("StatusRecentRounds"), pgx.StrictNamedArgs{"limit": limit, "now": now,
		"dead_after": RoundDeadAfter, "dead_without_heartbeat": RoundDeadWithoutHeartbeat})
	if err != nil {
		return nil, fmt.Errorf("list recent rounds: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[RecentRound])
	if err != nil {
		return nil, fmt.Errorf("list recent rounds: %w", err)
	}
	return out, nil
}

// StatusRoundsTotal counts every round ever recorded.
func StatusRoundsTotal(ctx context.Context, db DBTX) (int64, error) {
	rows, err := db.Query(ctx, SQL("StatusRoundsTotal"))
	if err != nil {
		return 0, fmt.Errorf("count rounds: %w", err)
	}
	n, err := pgx.CollectOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("count rounds: %w", err)
	}
	return n, nil
}
