// Package testfactory makes rows for tests with sensible defaults, so that a test names only the
// fields it is about (River's testfactory). Every helper fails the test on error.
package testfactory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probectl/probectl/queries"
)

var seq atomic.Int64

// ServerOpts chooses fields of a server; zero values take defaults (an active http server on the
// standard plan, due now).
type ServerOpts struct {
	Slug                string
	URL                 string
	Kind                string
	Plan                string
	CheckInterval       time.Duration
	Status              string
	MaintainerClaimedAt *time.Time
	NextCheckAt         *time.Time
}

// Server inserts a server and returns its id.
func Server(ctx context.Context, t testing.TB, db queries.DBTX, opts *ServerOpts) int64 {
	t.Helper()
	if opts == nil {
		opts = &ServerOpts{}
	}
	n := seq.Add(1)
	s := ServerRow{
		Slug: or(opts.Slug, fmt.Sprintf("server-%d", n)), EndpointURL: or(opts.URL, fmt.Sprintf("https://server-%d.example/", n)),
		Kind: or(opts.Kind, "http"), Plan: or(opts.Plan, "standard"), Status: or(opts.Status, "active"),
		CheckInterval: opts.CheckInterval, MaintainerClaimedAt: opts.MaintainerClaimedAt,
	}
	if s.CheckInterval == 0 {
		s.CheckInterval = 12 * time.Hour
		if s.Plan == "frequent" {
			s.CheckInterval = 15 * time.Minute
		}
	}
	if opts.NextCheckAt != nil {
		s.NextCheckAt = *opts.NextCheckAt
	} else {
		s.NextCheckAt = time.Now()
	}
	id, err := InsertServer(ctx, db, s)
	if err != nil {
		t.Fatalf("testfactory: insert server: %v", err)
	}
	return id
}

// RoundOpts chooses fields of a round; zero values: a manual round of version "test" started now,
// claim limit 5, concurrency 3, unfinished. Fanout is stored as given, so it is 0 unless set.
type RoundOpts struct {
	Trigger                         string
	ReleaseID                       *int64
	Version                         string
	Fanout, ClaimLimit, Concurrency int
	StartedAt                       *time.Time
	FinishedAt                      *time.Time
	// HeartbeatAt is the round's last heartbeat; nil leaves it NULL, as a binary from before
	// heartbeats does.
	HeartbeatAt *time.Time
}

// Round inserts a round and returns its id.
func Round(ctx context.Context, t testing.TB, db queries.DBTX, opts *RoundOpts) int64 {
	t.Helper()
	if opts == nil {
		opts = &RoundOpts{}
	}
	r := roundRow{
		Trigger: or(opts.Trigger, "manual"), ReleaseID: opts.ReleaseID, Version: or(opts.Version, "test"),
		Fanout: opts.Fanout, ClaimLimit: opts.ClaimLimit, Concurrency: opts.Concurrency, FinishedAt: opts.FinishedAt,
		HeartbeatAt: opts.HeartbeatAt,
	}
	if r.ClaimLimit == 0 {
		r.ClaimLimit = 5
	}
	if r.Concurrency == 0 {
		r.Concurrency = 3
	}
	r.StartedAt = time.Now()
	if opts.StartedAt != nil {
		r.StartedAt = *opts.StartedAt
	}
	id, err := insertRound(ctx, db, r)
	if err != nil {
		t.Fatalf("testfactory: insert round: %v", err)
	}
	return id
}

// JobOpts chooses fields of a job. ServerID is required. RequestedAt defaults to now; a job with
// FinishedAt set and no Outcome gets outcome ok; a job without FinishedAt is left open
// (unfinished, with no outcome).
type JobOpts struct {
	ServerID    int64
	RoundID     *int64
	Invocation  *int
	Reason      string
	RequestedAt *time.Time
	FinishedAt  *time.Time
	Outcome     string
	Error       string
}

// Job inserts a job and returns its id.
func Job(ctx context.Context, t testing.TB, db queries.DBTX, opts *JobOpts) int64 {
	t.Helper()
	if opts == nil || opts.ServerID == 0 {
		t.Fatalf("testfactory: a job needs a ServerID")
	}
	j := jobRow{ServerID: opts.ServerID, RoundID: opts.RoundID, Invocation: opts.Invocation,
		Reason: or(opts.Reason, "scheduled"), FinishedAt: opts.FinishedAt}
	j.RequestedAt = time.Now()
	if opts.RequestedAt != nil {
		j.RequestedAt = *opts.RequestedAt
	}
	if opts.FinishedAt != nil {
		outcome := or(opts.Outcome, "ok")
		j.Outcome = &outcome
	}
	if opts.Error != "" {
		j.Error = &opts.Error
	}
	id, err := insertJob(ctx, db, j)
	if err != nil {
		t.Fatalf("testfactory: insert job: %v", err)
	}
	return id
}

// RunOpts chooses fields of a run. JobID and ServerID are required; times default to now,
// Requests to 1, Result to {}; a nil Envelope stores NULL (a run missing its envelope).
type RunOpts struct {
	JobID, ServerID int64
	StartedAt       *time.Time
	FinishedAt      *time.Time
	Requests        int
	Result          json.RawMessage
	Envelope        json.RawMessage
}

// Run inserts a run and returns its id.
func Run(ctx context.Context, t testing.TB, db queries.DBTX, opts *RunOpts) int64 {
	t.Helper()
	if opts == nil || opts.JobID == 0 || opts.ServerID == 0 {
		t.Fatalf("testfactory: a run needs a JobID and a ServerID")
	}
	now := time.Now()
	r := runRow{JobID: opts.JobID, ServerID: opts.ServerID, StartedAt: now, FinishedAt: now,
		Requests: opts.Requests, Result: opts.Result, Envelope: opts.Envelope}
	if opts.StartedAt != nil {
		r.StartedAt = *opts.StartedAt
	}
	if opts.FinishedAt != nil {
		r.FinishedAt = *opts.FinishedAt
	}
	if r.Requests == 0 {
		r.Requests = 1
	}
	id, err := insertRun(ctx, db, r)
	if err != nil {
		t.Fatalf("testfactory: insert run: %v", err)
	}
	return id
}

// SpoolLine is the spool file line (its newline included) a round writes when it could not store
// job's result (result, an ok one, because of cause): job claimed for server serverID, as its
// next check time is now, in round roundID. The line's shape is probe's spoolEntry; written by
// hand, it is what a replay must read as a round's.
func SpoolLine(ctx context.Context, t testing.TB, db queries.DBTX, roundID, serverID, jobID int64, result map[string]any,
	cause string) []byte {
	t.Helper()
	var claimed time.Time
	if err := db.QueryRow(ctx, serverNextCheckSQL, serverID).Scan(&claimed); err != nil {
		t.Fatalf("testfactory: next check of server %d: %v", serverID, err)
	}
	now := time.Now().UTC()
	line, err := json.Marshal(map[string]any{"round_id": roundID, "slug": "s", "finish": "tx", "job_id": jobID,
		"server_id": serverID, "claimed_next_check_at": claimed, "outcome": "ok", "started_at": now,
		"check_finished_at": now, "requests": 1, "result": result, "spooled_at": now, "cause": cause})
	if err != nil {
		t.Fatalf("testfactory: encode a spool line: %v", err)
	}
	return append(line, '\n')
}

// Ptr returns a pointer to v, for the optional fields above.
func Ptr[T any](v T) *T { return &v }

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
