package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewRound is what a probe_rounds row records about how a round was run.
type NewRound struct {
	Trigger                         string // cron | manual
	ReleaseID                       *int64
	Version                         string
	Fanout, ClaimLimit, Concurrency int
	// Settings are every setting the round used, as JSON.
	Settings json.RawMessage
	Now      *time.Time
}

// InsertRound records the start of a round.
func InsertRound(ctx context.Context, db DBTX, r NewRound) (id int64, startedAt time.Time, err error) {
	settings := r.Settings
	if settings == nil {
		settings = json.RawMessage("{}")
	}
	err = db.QueryRow(ctx, SQL("InsertRound"), r.Trigger, r.ReleaseID, r.Version, r.Fanout,
		r.ClaimLimit, r.Concurrency, string(settings), r.Now).Scan(&id, &startedAt)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("record round: %w", err)
	}
	return id, startedAt, nil
}

// FinishRound records the end of a round.
func FinishRound(ctx context.Context, db DBTX, id int64, now *time.Time) (time.Time, error) {
	var at time.Time
	if err := db.QueryRow(ctx, SQL("FinishRound"), id, now).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("record end of round %d: %w", id, err)
	}
	return at, nil
}

// A round writes its heartbeat at least every RoundHeartbeatEvery while it runs; one whose
// heartbeat is older than RoundDeadAfter, by the database's clock, is dead: its process is gone
// and its open jobs wait for the in-flight window. A round a binary from before heartbeats started
// (heartbeat_at NULL) is judged by its start: dead once RoundDeadWithoutHeartbeat has passed, the
// longest such a round can run (its claiming budget, at most 14 minutes, then the worst case of a
// job claimed last, which fits the 15-minute in-flight window).
const (
	RoundHeartbeatEvery       = 10 * time.Second
	RoundDeadAfter            = 60 * time.Second
	RoundDeadWithoutHeartbeat = 30 * time.Minute
)

// A round's state, as status and deploy verify show it.
const (
	RoundRunning  = "running"
	RoundFinished = "finished"
	RoundDead     = "dead"
)

// RoundHeartbeat says the round is alive (now: nil for the database's clock).
func RoundHeartbeat(ctx context.Context, db DBTX, id int64, now *time.Time) error {
	if _, err := db.Exec(ctx, SQL("RoundHeartbeat"), id, now); err != nil {
		return fmt.Errorf("heartbeat of round %d: %w", id, err)
	}
	return nil
}

// RoundCounts is what a round left in the database.
type RoundCounts struct {
	Jobs, Runs, Servers, OK, Failed, Errors, Abandoned, OpenJobs, RunsUnsigned int
}

// CountRound counts a round's jobs, runs, servers, outcomes and open jobs.
func CountRound(ctx context.Context, db DBTX, roundID int64) (RoundCounts, error) {
	var c RoundCounts
	err := db.QueryRow(ctx, SQL("RoundCounts"), roundID).Scan(&c.Jobs, &c.Runs, &c.Servers, &c.OK,
		&c.Failed, &c.Errors, &c.Abandoned, &c.OpenJobs, &c.RunsUnsigned)
	if err != nil {
		return RoundCounts{}, fmt.Errorf("count round %d: %w", roundID, err)
	}
	return c, nil
}

// RoundJob is one job of a round, with its server and its run (if any).
type RoundJob struct {
	JobID       int64
	ServerID    int64
	Slug        string
	URL         string
	RoundID     int64
	Invocation  int
	Reason      string
	RequestedAt time.Time
	FinishedAt  *time.Time
	Outcome     *string
	Error       *string
	RunID       *int64
	Requests    *int
	Envelope    json.RawMessage
}

// ListRoundJobs returns every job of the given rounds, in request order.
func ListRoundJobs(ctx context.Context, db DBTX, roundIDs ...int64) ([]RoundJob, error) {
	rows, err := db.Query(ctx, SQL("ListRoundJobs"), roundIDs)
	if err != nil {
		return nil, fmt.Errorf("list jobs of rounds %v: %w", roundIDs, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RoundJob, error) {
		var j RoundJob
		var envelope []byte
		err := row.Scan(&j.JobID, &j.ServerID, &j.Slug, &j.URL, &j.RoundID, &j.Invocation, &j.Reason,
			&j.RequestedAt, &j.FinishedAt, &j.Outcome, &j.Error, &j.RunID, &j.Requests, &envelope)
		if envelope != nil {
			j.Envelope = json.RawMessage(envelope)
		}
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs of rounds %v: %w", roundIDs, err)
	}
	return out, nil
}
