package queries

import (
	"context"
	"encoding/json"
	"time"
)

// The Factory* wrappers insert rows with every field chosen. They exist for tests (through
// internal/testfactory); no probing path uses them.

// FactoryServer is a servers row with every field chosen.
type FactoryServer struct {
	Slug, EndpointURL, Kind, Plan, Status string
	CheckInterval                         time.Duration
	MaintainerClaimedAt                   *time.Time
	NextCheckAt                           time.Time
	CreatedAt                             *time.Time
}

// FactoryInsertServer inserts a server row as given.
func FactoryInsertServer(ctx context.Context, db DBTX, s FactoryServer) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, SQL("FactoryInsertServer"), s.Slug, s.EndpointURL, s.Kind, s.Plan,
		s.CheckInterval.Seconds(), s.Status, s.MaintainerClaimedAt, s.NextCheckAt, s.CreatedAt).Scan(&id)
	return id, err
}

// FactoryRound is a probe_rounds row with every field chosen.
type FactoryRound struct {
	Trigger                         string
	ReleaseID                       *int64
	Version                         string
	Fanout, ClaimLimit, Concurrency int
	StartedAt                       time.Time
	FinishedAt                      *time.Time
	HeartbeatAt                     *time.Time
}

// FactoryInsertRound inserts a round row as given.
func FactoryInsertRound(ctx context.Context, db DBTX, r FactoryRound) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, SQL("FactoryInsertRound"), r.Trigger, r.ReleaseID, r.Version, r.Fanout,
		r.ClaimLimit, r.Concurrency, r.StartedAt, r.FinishedAt, r.HeartbeatAt).Scan(&id)
	return id, err
}

// FactoryJob is a probe_jobs row with every field chosen.
type FactoryJob struct {
	ServerID    int64
	RoundID     *int64
	Invocation  *int
	Reason      string
	RequestedAt time.Time
	FinishedAt  *time.Time
	Outcome     *string
	Error       *string
}

// FactoryInsertJob inserts a job row as given.
func FactoryInsertJob(ctx context.Context, db DBTX, j FactoryJob) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, SQL("FactoryInsertJob"), j.ServerID, j.RoundID, j.Invocation, j.Reason,
		j.RequestedAt, j.FinishedAt, j.Outcome, j.Error).Scan(&id)
	return id, err
}

// FactoryRun is a probe_runs row with every field chosen.
type FactoryRun struct {
	JobID, ServerID       int64
	StartedAt, FinishedAt time.Time
	Requests              int
	Result                json.RawMessage
	Envelope              json.RawMessage // nil stores NULL: a run missing its envelope
}

// FactoryInsertRun inserts a run row as given.
func FactoryInsertRun(ctx context.Context, db DBTX, r FactoryRun) (int64, error) {
	var id int64
	var env any
	if r.Envelope != nil {
		env = r.Envelope
	}
	result := r.Result
	if result == nil {
		result = json.RawMessage(`{}`)
	}
	err := db.QueryRow(ctx, SQL("FactoryInsertRun"), r.JobID, r.ServerID, r.StartedAt, r.FinishedAt,
		r.Requests, result, env).Scan(&id)
	return id, err
}
