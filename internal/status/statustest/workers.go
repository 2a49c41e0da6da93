package statustest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
//   - SpoolWorker, alive, 2 results in 1 file waiting in its spool, and 1 file set aside there;
//   - DeadWorker, silent for 5 min; StoppedWorker, stopped cleanly 10 min ago;
//   - the queue: 2 waiting, 1 running, 1 to retry; in the last 24 h 3 retried (a second or third
//     attempt) and 1 discarded; a job discarded 2 days ago is not counted.
func SeedWorkers(ctx context.Context, t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	at := func(d time.Duration) time.Time { return Now.Add(d) }
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("statustest: seed workers: %v", err)
		}
	}
	worker := func(id, host string, pid int, heartbeat time.Time, stopped *time.Time, running, files, results, aside int) {
		t.Helper()
		exec(`INSERT INTO probectl_workers (id, host, pid, version, max_workers, started_at, heartbeat_at,
		                  stopped_at, invocations_running, spool_files, spool_results, spool_set_aside)
		      VALUES (@id, @host, @pid, 'v1.4.0', 10, @started_at, @heartbeat_at, @stopped_at, @running, @files,
		              @results, @aside)`,
			pgx.StrictNamedArgs{"id": id, "host": host, "pid": pid, "started_at": at(-2 * time.Hour),
				"heartbeat_at": heartbeat, "stopped_at": stopped, "running": running, "files": files,
				"results": results, "aside": aside})
	}
	worker(LeaderWorker, "web-1", 101, at(-5*time.Second), nil, 3, 0, 0, 0)
	worker(SpoolWorker, "web-2", 202, at(-4*time.Second), nil, 1, 1, 2, 1)
	worker(DeadWorker, "web-3", 303, at(-5*time.Minute), nil, 2, 0, 0, 0)
	stopped := at(-10 * time.Minute)
	worker(StoppedWorker, "web-4", 404, stopped, &stopped, 0, 0, 0, 0)
	exec(`INSERT INTO river_leader (leader_id, elected_at, expires_at) VALUES ($1, $2, $3)`,
		LeaderWorker, at(-time.Hour), at(25*time.Second))
	job := func(state string, attempt int, created time.Time, attempted, finalized *time.Time) {
		t.Helper()
		exec(`INSERT INTO river_job (kind, queue, args, max_attempts, state, attempt, created_at, scheduled_at,
		                   attempted_at, finalized_at)
		      VALUES ('probectl_invocation', 'probectl', '{"round_id": 3}', 3, @state, @attempt, @created_at,
		              @created_at, @attempted_at, @finalized_at)`,
			pgx.StrictNamedArgs{"state": state, "attempt": attempt, "created_at": created,
				"attempted_at": attempted, "finalized_at": finalized})
	}
	ptr := func(d time.Duration) *time.Time { v := at(d); return &v }
	job("available", 0, at(-time.Minute), nil, nil)
	job("available", 0, at(-time.Minute), nil, nil)
	job("running", 1, at(-2*time.Minute), ptr(-time.Minute), nil)
	job("retryable", 2, at(-time.Hour), ptr(-10*time.Minute), nil)
	job("completed", 2, at(-time.Hour), ptr(-50*time.Minute), ptr(-49*time.Minute))
	job("discarded", 3, at(-time.Hour), ptr(-31*time.Minute), ptr(-30*time.Minute))
	job("discarded", 3, at(-48*time.Hour), ptr(-47*time.Hour), ptr(-47*time.Hour))
}
