package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Run is one stored run as the history views show it (the view run_facts).
type Run struct {
	ID         int64     `db:"id"`
	JobID      int64     `db:"job_id"`
	RoundID    *int64    `db:"round_id"`
	ServerID   int64     `db:"server_id"`
	Server     string    `db:"server"`
	Kind       string    `db:"kind"`
	Outcome    string    `db:"outcome"`
	Summary    string    `db:"summary"`
	Error      *string   `db:"error"`
	Requests   int       `db:"requests"`
	StartedAt  time.Time `db:"started_at"`
	FinishedAt time.Time `db:"finished_at"`
	// KeyID is the key id of the envelope's first signature; nil: the run is unsigned.
	KeyID *string `db:"key_id"`
	// ProbectlFault: the run was interrupted, fenced or stored late by probectl; it says nothing
	// about the server and is left out of uptime.
	ProbectlFault bool `db:"probectl_fault"`
	// RoundDegraded: the run's round was judged degraded by the storm guard (DegradedRounds), so
	// its failure counted toward no server's down threshold. Not a column: history fills it.
	RoundDegraded bool `db:"-"`
}

// Duration is how long the check took, by the prober's clock.
func (r Run) Duration() time.Duration { return r.FinishedAt.Sub(r.StartedAt) }

// RunFilter selects runs; zero fields match any run.
type RunFilter struct {
	Server   string
	RoundID  *int64
	Outcomes []string
	Since    *time.Time
	Limit    int
}

// ListRuns returns the runs that match, newest first, at most f.Limit of them.
func ListRuns(ctx context.Context, db DBTX, f RunFilter) ([]Run, error) {
	var server *string
	if f.Server != "" {
		server = &f.Server
	}
	var outcomes []string
	if len(f.Outcomes) > 0 {
		outcomes = f.Outcomes
	}
	rows, err := db.Query(ctx, SQL("ListRuns"), pgx.StrictNamedArgs{"server": server, "round_id": f.RoundID,
		"outcomes": outcomes, "since": f.Since, "limit": f.Limit})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Run])
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// RunDetail is a run with its result, its envelope and what verifying the envelope needs.
type RunDetail struct {
	Run
	EndpointURL string  `db:"endpoint_url"`
	JobOutcome  *string `db:"job_outcome"`
	// JobFinishedAt is when the job finished by the database's clock (nil: still open).
	JobFinishedAt *time.Time      `db:"job_finished_at"`
	Result        json.RawMessage `db:"result"`
	Envelope      json.RawMessage `db:"envelope"`
	// SignedJobID is the job the envelope was signed for: JobID, or for a run restored after a
	// failover under a job of its own, the job of the claim it answered.
	SignedJobID int64 `db:"signed_job_id" json:"-"`
}

// ErrNoRun says no run has the id asked for.
var ErrNoRun = errors.New("no such run")

// GetRun returns one run, or ErrNoRun.
func GetRun(ctx context.Context, db DBTX, id int64) (RunDetail, error) {
	rows, err := db.Query(ctx, SQL("GetRun"), id)
	if err != nil {
		return RunDetail{}, fmt.Errorf("read run %d: %w", id, err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RunDetail])
	if errors.Is(err, pgx.ErrNoRows) {
		return RunDetail{}, fmt.Errorf("run %d: %w", id, ErrNoRun)
	}
	if err != nil {
		return RunDetail{}, fmt.Errorf("read run %d: %w", id, err)
	}
	return d, nil
}
