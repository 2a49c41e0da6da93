package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/probe/settings"
)

// InsertRound records the start of a round run with the settings of record (now: nil for the
// database's clock). The row's columns repeat the settings a list of rounds shows (trigger,
// release, version, fan-out, claim limit, concurrency); its settings column holds the whole record.
func InsertRound(ctx context.Context, db DBTX, record settings.Record, now *time.Time) (id int64, startedAt time.Time, err error) {
	s := record.Settings
	js, err := json.Marshal(record)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("record round: encode its settings: %w", err)
	}
	started, err := rowOf[struct {
		ID        int64     `db:"id"`
		StartedAt time.Time `db:"started_at"`
	}](ctx, db, "InsertRound", pgx.StrictNamedArgs{"trigger": s.Trigger, "release_id": s.ReleaseID, "version": s.Version,
		"fanout": s.Fanout, "claim_limit": s.ClaimLimit, "concurrency": s.Concurrency, "settings": string(js), "now": now})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("record round: %w", err)
	}
	return started.ID, started.StartedAt, nil
}

// FinishRound records the end of a round.
func FinishRound(ctx context.Context, db DBTX, id int64, now *time.Time) (time.Time, error) {
	at, err := valueOf[time.Time](ctx, db, "FinishRound", id, now)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrRoundGone
	}
	if err != nil {
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
	// RoundRecovered is a dead round that claimed jobs and every one of them has its run (runs
	// recover stored what its spool held): the alerts' rule (alert_round_recovered, 00022), under
	// which its round.dead is resolved. Nothing of it is lost. A dead round whose jobs were closed
	// as abandoned without a run stays RoundDead, though none of its jobs is open.
	RoundRecovered = "recovered"
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
	Jobs         int `db:"jobs"`
	Runs         int `db:"runs"`
	Servers      int `db:"servers"`
	OK           int `db:"ok"`
	Failed       int `db:"failed"`
	Errors       int `db:"errors"`
	Abandoned    int `db:"abandoned"`
	OpenJobs     int `db:"open_jobs"`
	RunsUnsigned int `db:"runs_unsigned"`
}

// CountRound counts a round's jobs, runs, servers, outcomes and open jobs.
func CountRound(ctx context.Context, db DBTX, roundID int64) (RoundCounts, error) {
	c, err := rowOf[RoundCounts](ctx, db, "RoundCounts", roundID)
	if err != nil {
		return RoundCounts{}, fmt.Errorf("count round %d: %w", roundID, err)
	}
	return c, nil
}

// RoundJob is one job of a round, with its server and its run (if any).
type RoundJob struct {
	JobID       int64           `db:"job_id"`
	ServerID    int64           `db:"server_id"`
	Slug        string          `db:"slug"`
	URL         string          `db:"endpoint_url"`
	RoundID     int64           `db:"round_id"`
	Invocation  int             `db:"invocation"`
	Reason      string          `db:"reason"`
	RequestedAt time.Time       `db:"requested_at"`
	FinishedAt  *time.Time      `db:"finished_at"`
	Outcome     *string         `db:"outcome"`
	Error       *string         `db:"error"`
	RunID       *int64          `db:"run_id"`
	Requests    *int            `db:"requests"`
	Envelope    json.RawMessage `db:"envelope"`
}

// ListRoundJobs returns every job of the given rounds, in request order.
func ListRoundJobs(ctx context.Context, db DBTX, roundIDs ...int64) ([]RoundJob, error) {
	out, err := rowsOf[RoundJob](ctx, db, "ListRoundJobs", roundIDs)
	if err != nil {
		return nil, fmt.Errorf("list jobs of rounds %v: %w", roundIDs, err)
	}
	return out, nil
}

// InvocationClaims are the jobs invocation inv of a round has claimed so far, in any attempt:
// how many, and the last of them (0: none).
type InvocationClaims struct {
	Claimed int   `db:"claimed"`
	LastJob int64 `db:"last_job"`
}

// InvocationClaimed reads the claims of invocation inv of round id so far.
func InvocationClaimed(ctx context.Context, db DBTX, id int64, inv int) (InvocationClaims, error) {
	c, err := rowOf[InvocationClaims](ctx, db, "InvocationClaims", id, inv)
	if err != nil {
		return c, fmt.Errorf("count the claims of invocation %d of round %d: %w", inv, id, err)
	}
	return c, nil
}
