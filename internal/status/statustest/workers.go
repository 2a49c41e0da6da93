package statustest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Worker ids SeedWorkers writes.
const (
	LeaderWorker  = "web-1-101"
	SpoolWorker   = "web-2-202"
	DeadWorker    = "web-3-303"
	StoppedWorker = "web-4-404"
)

// SeedWorkers writes four `probectl worker` heartbeats, River's leader and probectl's invocations
// in River's queue, as of Now:
//   - LeaderWorker, alive and River's leader, running 3 of 10 invocations;
//   - SpoolWorker, alive, 2 results in 1 file waiting in its spool;
//   - DeadWorker, silent for 5 min; StoppedWorker, stopped cleanly 10 min ago;
//   - the queue: 2 waiting, 1 running, 1 to retry; in the last 24 h 3 retried (a second or third
//     attempt) and 1 discarded; a job discarded 2 days ago is not counted.
func SeedWorkers(ctx context.Context, t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	at := func(d time.Duration) time.Time { return Now.Add(d) }
	const worker = `INSERT INTO probectl_workers (id, host, pid, version, max_workers, started_at, heartbeat_at,
	                    stopped_at, invocations_running, spool_files, spool_results)
	                VALUES ($1, $2, $3, 'v1.4.0', 10, $4, $5, $6, $7, $8, $9)`
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("statustest: seed workers: %v", err)
		}
	}
	exec(worker, LeaderWorker, "web-1", 101, at(-2*time.Hour), at(-5*time.Second), nil, 3, 0, 0)
	exec(worker, SpoolWorker, "web-2", 202, at(-2*time.Hour), at(-4*time.Second), nil, 1, 1, 2)
	exec(worker, DeadWorker, "web-3", 303, at(-2*time.Hour), at(-5*time.Minute), nil, 2, 0, 0)
	exec(worker, StoppedWorker, "web-4", 404, at(-2*time.Hour), at(-10*time.Minute), at(-10*time.Minute), 0, 0, 0)
	exec(`INSERT INTO river_leader (leader_id, elected_at, expires_at) VALUES ($1, $2, $3)`,
		LeaderWorker, at(-time.Hour), at(25*time.Second))
	const job = `INSERT INTO river_job (kind, queue, args, max_attempts, state, attempt, created_at, scheduled_at,
	                 attempted_at, finalized_at)
	             VALUES ('probectl_invocation', 'probectl', '{"round_id": 3}', 3, $1, $2, $3, $3, $4, $5)`
	var none *time.Time
	exec(job, "available", 0, at(-time.Minute), none, none)
	exec(job, "available", 0, at(-time.Minute), none, none)
	exec(job, "running", 1, at(-2*time.Minute), at(-time.Minute), none)
	exec(job, "retryable", 2, at(-time.Hour), at(-10*time.Minute), none)
	exec(job, "completed", 2, at(-time.Hour), at(-50*time.Minute), at(-49*time.Minute))
	exec(job, "discarded", 3, at(-time.Hour), at(-31*time.Minute), at(-30*time.Minute))
	exec(job, "discarded", 3, at(-48*time.Hour), at(-47*time.Hour), at(-47*time.Hour))
}
