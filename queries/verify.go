package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// VerifyRound is one round deploy verify reads back, with what it left in the database.
type VerifyRound struct {
	ID                  int64      `db:"id"`
	StartedAt           time.Time  `db:"started_at"`
	FinishedAt          *time.Time `db:"finished_at"`
	Jobs                int        `db:"jobs"`
	Runs                int        `db:"runs"`
	Servers             int        `db:"servers"`
	OpenJobs            int        `db:"open_jobs"`
	RunsMissingEnvelope int        `db:"runs_missing_envelope"`
	// Lost are its jobs closed as abandoned without a run: checks it claimed and nothing stored.
	Lost int `db:"lost"`
	// HeartbeatAt is the round's last heartbeat (nil before 00005); Dead: unfinished and its
	// heartbeat stopped (RoundDeadAfter); Recovered: dead, but it claimed jobs and every one of
	// them has its run (the alerts' rule, alert_round_recovered).
	HeartbeatAt *time.Time `db:"heartbeat_at"`
	Dead        bool       `db:"dead"`
	Recovered   bool       `db:"recovered"`
}

// VerifyRounds returns the first limit rounds that started at or after since under the release
// (or under none), oldest first, with their counts.
func VerifyRounds(ctx context.Context, db DBTX, releaseID int64, since time.Time, limit int) ([]VerifyRound, error) {
	out, err := rowsOf[VerifyRound](ctx, db, "VerifyRounds", roundsAfterArgs(releaseID, since, limit))
	if err != nil {
		return nil, fmt.Errorf("read rounds after %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}

// roundsAfterArgs are the arguments of VerifyRounds and VerifyRoundProgress: the same rounds.
func roundsAfterArgs(releaseID int64, since time.Time, limit int) pgx.StrictNamedArgs {
	return pgx.StrictNamedArgs{"release_id": releaseID, "since": since, "limit": limit,
		"dead_after": RoundDeadAfter, "dead_without_heartbeat": RoundDeadWithoutHeartbeat}
}

// VerifyRoundProgress says how many of the first limit rounds after since exist and how many of
// those have finished or died.
func VerifyRoundProgress(ctx context.Context, db DBTX, releaseID int64, since time.Time, limit int) (found, finished int, err error) {
	p, err := rowOf[struct {
		Found    int `db:"found"`
		Finished int `db:"finished"`
	}](ctx, db, "VerifyRoundProgress", roundsAfterArgs(releaseID, since, limit))
	if err != nil {
		return 0, 0, fmt.Errorf("count rounds after %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return p.Found, p.Finished, nil
}

// SignedRun is a run with an envelope, and the server it is stored against.
type SignedRun struct {
	RoundID  int64  `db:"round_id"`
	JobID    int64  `db:"job_id"`
	RunID    int64  `db:"run_id"`
	ServerID int64  `db:"server_id"`
	Slug     string `db:"slug"`
	URL      string `db:"endpoint_url"`
	// FinishedAt is when the run's job finished, by the database's clock: after the run was
	// signed. (For a job left open, the run's own finish time, by the prober's clock.)
	FinishedAt time.Time       `db:"finished_at"`
	Envelope   json.RawMessage `db:"envelope"`
}

// VerifyEnvelopes streams every run of the rounds that has an envelope to fn, in job order.
func VerifyEnvelopes(ctx context.Context, db DBTX, roundIDs []int64, fn func(SignedRun) error) error {
	rows, err := db.Query(ctx, SQL("VerifyEnvelopes"), roundIDs)
	if err != nil {
		return fmt.Errorf("read envelopes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := pgx.RowToStructByName[SignedRun](rows)
		if err != nil {
			return fmt.Errorf("read envelopes: %w", err)
		}
		if err := fn(r); err != nil {
			return fmt.Errorf("read envelopes: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read envelopes: %w", err)
	}
	return nil
}

// ReleaseActiveUntil returns when the release stopped being active after since (a deploy or a
// rollback away from it), or nil while it is still active.
func ReleaseActiveUntil(ctx context.Context, db DBTX, releaseID int64, since time.Time) (*time.Time, error) {
	until, err := valueOf[*time.Time](ctx, db, "ReleaseActiveUntil", releaseID, since)
	if err != nil {
		return nil, fmt.Errorf("read when release %d stopped being active: %w", releaseID, err)
	}
	return until, nil
}

// JobRounds returns the round of each given job that belongs to one.
func JobRounds(ctx context.Context, db DBTX, jobIDs []int64) (map[int64]int64, error) {
	rows, err := rowsOf[struct {
		JobID   int64 `db:"job_id"`
		RoundID int64 `db:"round_id"`
	}](ctx, db, "JobRounds", jobIDs)
	if err != nil {
		return nil, fmt.Errorf("read rounds of jobs: %w", err)
	}
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.JobID] = r.RoundID
	}
	return out, nil
}

// HealthServer is one server checked in the rounds deploy verify reads: its jobs there with an
// outcome, how many were ok, and the outcome of its last job under the baseline release (nil:
// that release never checked it).
type HealthServer struct {
	ServerID        int64   `db:"server_id"`
	Slug            string  `db:"slug"`
	Jobs            int     `db:"jobs"`
	OK              int     `db:"ok"`
	BaselineOutcome *string `db:"baseline_outcome"`
}

// VerifyHealth reads the health of the rounds roundIDs per server, against the last job of each
// server in a round of the baseline release (nil: none) started before since.
func VerifyHealth(ctx context.Context, db DBTX, roundIDs []int64, baseline *int64, since time.Time) ([]HealthServer, error) {
	out, err := rowsOf[HealthServer](ctx, db, "VerifyHealth", pgx.NamedArgs{
		"rounds": roundIDs, "baseline": baseline, "since": since})
	if err != nil {
		return nil, fmt.Errorf("read the ok share of rounds %v: %w", roundIDs, err)
	}
	return out, nil
}
