package probe

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// A claim is dated after the snapshot it read, not before: a finish that commits while the claim
// waits for its lock is then dated before the claim that saw it. Dated earlier, the claim would come
// out "requested before the first job finished", and the audit would class the incident's pair (a
// claim after the finish, before the advance) as an overlap. probe_claim_due (00021) blocks only
// on its lock, before it reads the clock and before its claiming statement takes its snapshot; it
// dates each job during that statement.
func TestAClaimIsDatedAfterTheFinishItSaw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testDB(t)

	// The server whose finish lands in the incident's order: job finished, next check not moved.
	due := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "finished-not-advanced"})
	first := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: due, RequestedAt: testfactory.Ptr(time.Now().Add(-time.Second))})

	// Hold the claim's lock on a connection of the test's: the claim queues on it.
	locker, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer locker.Release()
	_, err = locker.Exec(ctx, testSQL(t, "hold_claim_lock.sql"), queries.ClaimLockKey)
	require.NoError(t, err)
	defer func() { _, _ = locker.Exec(ctx, testSQL(t, "release_claim_lock.sql"), queries.ClaimLockKey) }()

	round := testfactory.Round(ctx, t, pool, nil)
	claimed := make(chan []queries.ClaimedJob, 1)
	failed := make(chan error, 1)
	go func() {
		jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5, MinSpacing: 0})
		if err != nil {
			failed <- err
			return
		}
		claimed <- jobs
	}()
	waitForLockWaiters(t, pool, 1)

	// The first job finishes while the claim waits; its server stays due (no advance yet).
	res, err := queries.FinishJob(ctx, pool, queries.FinishParams{JobID: first, ServerID: due, Outcome: "ok",
		StartedAt: time.Now(), CheckFinishedAt: time.Now(), Requests: 1, Result: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.True(t, res.JobFinished)
	_, err = locker.Exec(ctx, testSQL(t, "release_claim_lock.sql"), queries.ClaimLockKey)
	require.NoError(t, err)

	var jobs []queries.ClaimedJob
	select {
	case err := <-failed:
		t.Fatalf("claim: %v", err)
	case jobs = <-claimed:
	}
	require.Len(t, jobs, 1, "the finished, not advanced server is due and has no open job")
	require.Equal(t, due, jobs[0].ServerID)
	require.True(t, jobs[0].RequestedAt.After(res.FinishedAt),
		"claim dated %s, before the finish it saw (%s)", jobs[0].RequestedAt, res.FinishedAt)
}
