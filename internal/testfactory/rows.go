package testfactory

import (
	"context"
	"crypto/ed25519"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/probectl/probectl/queries"
)

// The statements below write and read rows for tests only. They live here, not in queries, so
// that the binary carries none of them (deadcode ./cmd/probectl reports none; see the Makefile's
// lint target).

var (
	//go:embed sql/insert_server.sql
	insertServerSQL string
	//go:embed sql/insert_round.sql
	insertRoundSQL string
	//go:embed sql/insert_job.sql
	insertJobSQL string
	//go:embed sql/insert_run.sql
	insertRunSQL string
	//go:embed sql/insert_run_before_partitions.sql
	insertRunBeforePartitionsSQL string
	//go:embed sql/signing_keys.sql
	signingKeysSQL string
	//go:embed sql/set_server_status.sql
	setServerStatusSQL string
	//go:embed sql/server_next_check.sql
	serverNextCheckSQL string
)

// ServerRow is a servers row with every field chosen.
type ServerRow struct {
	Slug, EndpointURL, Kind, Plan, Status string
	CheckInterval                         time.Duration
	MaintainerClaimedAt                   *time.Time
	NextCheckAt                           time.Time
	CreatedAt                             *time.Time
}

// InsertServer inserts a server row as given. It returns the error, for tests that expect one
// (a read-only role); Server fails the test instead.
func InsertServer(ctx context.Context, db queries.DBTX, s ServerRow) (int64, error) {
	return insert(ctx, db, insertServerSQL, pgx.StrictNamedArgs{"slug": s.Slug, "endpoint_url": s.EndpointURL,
		"kind": s.Kind, "plan": s.Plan, "check_interval": s.CheckInterval, "status": s.Status,
		"maintainer_claimed_at": s.MaintainerClaimedAt, "next_check_at": s.NextCheckAt, "created_at": s.CreatedAt})
}

// roundRow is a probe_rounds row with every field chosen.
type roundRow struct {
	Trigger                         string
	ReleaseID                       *int64
	Version                         string
	Fanout, ClaimLimit, Concurrency int
	StartedAt                       time.Time
	FinishedAt                      *time.Time
	HeartbeatAt                     *time.Time
}

func insertRound(ctx context.Context, db queries.DBTX, r roundRow) (int64, error) {
	return insert(ctx, db, insertRoundSQL, pgx.StrictNamedArgs{"trigger": r.Trigger, "release_id": r.ReleaseID,
		"version": r.Version, "fanout": r.Fanout, "claim_limit": r.ClaimLimit, "concurrency": r.Concurrency,
		"started_at": r.StartedAt, "finished_at": r.FinishedAt, "heartbeat_at": r.HeartbeatAt})
}

// jobRow is a probe_jobs row with every field chosen.
type jobRow struct {
	ServerID    int64
	RoundID     *int64
	Invocation  *int
	Reason      string
	RequestedAt time.Time
	FinishedAt  *time.Time
	Outcome     *string
	Error       *string
}

func insertJob(ctx context.Context, db queries.DBTX, j jobRow) (int64, error) {
	return insert(ctx, db, insertJobSQL, pgx.StrictNamedArgs{"server_id": j.ServerID, "round_id": j.RoundID,
		"invocation": j.Invocation, "reason": j.Reason, "requested_at": j.RequestedAt,
		"finished_at": j.FinishedAt, "outcome": j.Outcome, "error": j.Error})
}

// runRow is a probe_runs row with every field chosen.
type runRow struct {
	JobID, ServerID       int64
	StartedAt, FinishedAt time.Time
	Requests              int
	Result                json.RawMessage
	Envelope              json.RawMessage // nil stores NULL: a run missing its envelope
}

func insertRun(ctx context.Context, db queries.DBTX, r runRow) (int64, error) {
	var env any
	if r.Envelope != nil {
		env = r.Envelope
	}
	result := r.Result
	if result == nil {
		result = json.RawMessage(`{}`)
	}
	args := pgx.StrictNamedArgs{"job_id": r.JobID, "server_id": r.ServerID, "started_at": r.StartedAt,
		"finished_at": r.FinishedAt, "requests": r.Requests, "result": result, "envelope": env}
	id, err := insert(ctx, db, insertRunSQL, args)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42703" {
		// A migration test's database stopped before 00017: runs have no partition key there.
		return insert(ctx, db, insertRunBeforePartitionsSQL, args)
	}
	return id, err
}

// insert runs an INSERT ... RETURNING id.
func insert(ctx context.Context, db queries.DBTX, sql string, args ...any) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, sql, args...).Scan(&id)
	return id, err
}

// SigningKeys returns the public halves of the keys that are not retired, by key id: what a
// round may sign with.
func SigningKeys(ctx context.Context, t testing.TB, db queries.DBTX) map[string]ed25519.PublicKey {
	t.Helper()
	type key struct {
		ID     string `db:"key_id"`
		Public []byte `db:"public_key"`
	}
	rows, err := db.Query(ctx, signingKeysSQL)
	if err != nil {
		t.Fatalf("testfactory: read signing keys: %v", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByName[key])
	if err != nil {
		t.Fatalf("testfactory: read signing keys: %v", err)
	}
	out := make(map[string]ed25519.PublicKey, len(keys))
	for _, k := range keys {
		out[k.ID] = ed25519.PublicKey(k.Public)
	}
	return out
}

// SetServerStatus pauses, delists or reactivates a server directly, as a maintainer's change
// landing in the middle of a round would. It returns the error rather than failing the test, so
// that a goroutine other than the test's may call it.
func SetServerStatus(ctx context.Context, db queries.DBTX, slug, status string) error {
	_, err := insert(ctx, db, setServerStatusSQL, slug, status)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("server %s: %w", slug, queries.ErrNoServer)
	}
	return err
}

// Migrate migrates the database at url through the pool probectl opens, as a template's setup
// (dbtest.NewTemplate) wants.
func Migrate(ctx context.Context, url string) error {
	pool, err := queries.Connect(ctx, url, "test", queries.ConnectOptions{})
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = queries.Migrate(ctx, pool)
	return err
}
