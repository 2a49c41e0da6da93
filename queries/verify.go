package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// VerifyRound is one round deploy verify reads back, with what it left in the database.
type VerifyRound struct {
	ID                  int64
	StartedAt           time.Time
	FinishedAt          *time.Time
	Jobs                int
	Runs                int
	Servers             int
	OpenJobs            int
	RunsMissingEnvelope int
	// HeartbeatAt is the round's last heartbeat (nil before 00005); Dead: unfinished and its
	// heartbeat stopped (RoundDeadAfter).
	HeartbeatAt *time.Time
	Dead        bool
}

// VerifyRounds returns the first limit rounds that started at or after since under the release
// (or under none), oldest first, with their counts.
func VerifyRounds(ctx context.Context, db DBTX, releaseID int64, since time.Time, limit int) ([]VerifyRound, error) {
	rows, err := db.Query(ctx, SQL("VerifyRounds"), releaseID, since, limit, RoundDeadAfter.Seconds(),
		RoundDeadWithoutHeartbeat.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read rounds after %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (VerifyRound, error) {
		var r VerifyRound
		err := row.Scan(&r.ID, &r.StartedAt, &r.FinishedAt, &r.Jobs, &r.Runs, &r.Servers, &r.OpenJobs,
			&r.RunsMissingEnvelope, &r.HeartbeatAt, &r.Dead)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read rounds after %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}

// VerifyRoundProgress says how many of the first limit rounds after since exist and how many of
// those have finished or died.
func VerifyRoundProgress(ctx context.Context, db DBTX, releaseID int64, since time.Time, limit int) (found, finished int, err error) {
	err = db.QueryRow(ctx, SQL("VerifyRoundProgress"), releaseID, since, limit,
		RoundDeadAfter.Seconds(), RoundDeadWithoutHeartbeat.Seconds()).Scan(&found, &finished)
	if err != nil {
		return 0, 0, fmt.Errorf("count rounds after %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return found, finished, nil
}

// SignedRun is a run with an envelope, and the server it is stored against.
type SignedRun struct {
	RoundID  int64
	JobID    int64
	RunID    int64
	ServerID int64
	Slug     string
	URL      string
	// FinishedAt is when the run's job finished, by the database's clock: after the run was
	// signed. (For a job left open, the run's own finish time, by the prober's clock.)
	FinishedAt time.Time
	Envelope   json.RawMessage
}

// VerifyEnvelopes streams every run of the rounds that has an envelope to fn, in job order.
func VerifyEnvelopes(ctx context.Context, db DBTX, roundIDs []int64, fn func(SignedRun) error) error {
	rows, err := db.Query(ctx, SQL("VerifyEnvelopes"), roundIDs)
	if err != nil {
		return fmt.Errorf("read envelopes: %w", err)
	}
	var r SignedRun
	var envelope []byte
	_, err = pgx.ForEachRow(rows, []any{&r.RoundID, &r.JobID, &r.RunID, &r.ServerID, &r.Slug, &r.URL, &r.FinishedAt, &envelope}, func() error {
		r.Envelope = json.RawMessage(bytes.Clone(envelope))
		return fn(r)
	})
	if err != nil {
		return fmt.Errorf("read envelopes: %w", err)
	}
	return nil
}

// ReleaseActiveUntil returns when the release stopped being active after since (a deploy or a
// rollback away from it), or nil while it is still active.
func ReleaseActiveUntil(ctx context.Context, db DBTX, releaseID int64, since time.Time) (*time.Time, error) {
	var until *time.Time
	if err := db.QueryRow(ctx, SQL("ReleaseActiveUntil"), releaseID, since).Scan(&until); err != nil {
		return nil, fmt.Errorf("read when release %d stopped being active: %w", releaseID, err)
	}
	return until, nil
}

// JobRounds returns the round of each given job that belongs to one.
func JobRounds(ctx context.Context, db DBTX, jobIDs []int64) (map[int64]int64, error) {
	rows, err := db.Query(ctx, SQL("JobRounds"), jobIDs)
	if err != nil {
		return nil, fmt.Errorf("read rounds of jobs: %w", err)
	}
	out := make(map[int64]int64, len(jobIDs))
	var job, round int64
	_, err = pgx.ForEachRow(rows, []any{&job, &round}, func() error {
		out[job] = round
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rounds of jobs: %w", err)
	}
	return out, nil
}
