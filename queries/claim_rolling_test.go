package queries_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// previousBinarysClaim is the claim exactly as the binary before migration 00009 sends it
// (queries/claim.sql then): probe_claim, which does not lease the server. Its finish was FinishTx
// as it is today (probe_finish, unchanged), as a compare-and-set on the next_check_at it claimed.
const previousBinarysClaim = `SELECT c.job_id, c.server_id, c.slug, c.endpoint_url, c.kind, c.claimed_next_check_at, c.reason, c.requested_at,
       s.transport
  FROM probe_claim(p_round_id    => $1,
                   p_invocation  => $2,
                   p_limit       => $3,
                   p_min_spacing => make_interval(secs => $4::float8),
                   p_in_flight   => make_interval(secs => $5::float8),
                   p_now         => $6::timestamptz) AS c
  LEFT JOIN servers AS s ON s.id = c.server_id`

// previousJob is what the previous binary read from its claim, by name.
type previousJob struct {
	JobID              int64     `db:"job_id"`
	ServerID           int64     `db:"server_id"`
	Slug               string    `db:"slug"`
	URL                string    `db:"endpoint_url"`
	Kind               string    `db:"kind"`
	ClaimedNextCheckAt time.Time `db:"claimed_next_check_at"`
	Reason             string    `db:"reason"`
	RequestedAt        time.Time `db:"requested_at"`
	Transport          *string   `db:"transport"`
}

func claimAsPrevious(t *testing.T, db queries.DBTX, round int64, limit int, spacing time.Duration, at *time.Time) []previousJob {
	t.Helper()
	rows, err := db.Query(context.Background(), previousBinarysClaim, round, 1, limit, spacing.Seconds(), queries.InFlightWindow.Seconds(), at)
	require.NoError(t, err)
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByName[previousJob])
	require.NoError(t, err)
	return jobs
}

func finishAt(t *testing.T, db queries.DBTX, jobID, serverID int64, claimed time.Time, at *time.Time) queries.FinishResult {
	t.Helper()
	r, err := queries.FinishTx(context.Background(), db, queries.FinishParams{JobID: jobID, ServerID: serverID,
		ClaimedNextCheckAt: claimed, Outcome: "ok", StartedAt: time.Now(), CheckFinishedAt: time.Now(), Requests: 1,
		Result: json.RawMessage(`{"outcome":"ok"}`), Now: at})
	require.NoError(t, err)
	return r
}

// During a rolling deploy the previous binary's rounds and this one's claim from the same servers.
// Its claims leave their servers due (no lease), so only the open-job guard keeps this binary's
// claim off them; this binary's leased servers are not due for the previous binary's claim. With
// the spacing guard off, so that it hides nothing.
func TestThePreviousBinarysClaimAndTheLeasingClaimNeverTakeAServerTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	for range 10 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
	}
	oldRound, newRound := testfactory.Round(ctx, t, pool, nil), testfactory.Round(ctx, t, pool, nil)
	at := now

	old := claimAsPrevious(t, pool, oldRound, 3, 0, &at)
	require.Len(t, old, 3)
	leased, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: newRound, Limit: 4, Now: &at})
	require.NoError(t, err)
	require.Len(t, leased, 4, "the leasing claim takes the next four, not the previous binary's three in flight")
	old2 := claimAsPrevious(t, pool, oldRound, 10, 0, &at)
	require.Len(t, old2, 3, "the previous binary's claim takes the last three, not the leased four")
	more, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: newRound, Limit: 10, Now: &at})
	require.NoError(t, err)
	require.Empty(t, more, "every server is in flight")

	// Each binary finishes its own jobs; every server advances by its interval.
	done := now.Add(5 * time.Second)
	for _, j := range append(old, old2...) {
		r := finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, &done)
		require.True(t, r.Advanced && r.JobFinished, "previous binary's job %d: %+v", j.JobID, r)
	}
	for _, j := range leased {
		r := finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, &done)
		require.True(t, r.Advanced && r.JobFinished, "leased job %d: %+v", j.JobID, r)
	}
	require.Empty(t, claimAsPrevious(t, pool, oldRound, 10, 0, &done))
	var notAdvanced int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM servers WHERE next_check_at <> $1::timestamptz + check_interval`,
		done).Scan(&notAdvanced))
	require.Zero(t, notAdvanced)
}

// The same, concurrently and on the clock: two claimers of each binary, each finishing what it
// claims at once, until no server is due. No server is claimed twice.
func TestRoundsOfBothBinariesRunningAtOnceClaimEachServerOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	const servers = 60
	for range servers {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	}
	var rounds []int64
	var wg sync.WaitGroup
	for i := range 4 {
		round := testfactory.Round(ctx, t, pool, nil)
		rounds = append(rounds, round)
		previous := i%2 == 0
		wg.Go(func() {
			for range servers {
				var claimed int
				if previous {
					jobs := claimAsPrevious(t, pool, round, 3, 0, nil)
					for _, j := range jobs {
						finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, nil)
					}
					claimed = len(jobs)
				} else {
					jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 3})
					if !assert.NoError(t, err) {
						return
					}
					for _, j := range jobs {
						finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, nil)
					}
					claimed = len(jobs)
				}
				if claimed == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	jobs, err := queries.ListRoundJobs(ctx, pool, rounds...)
	require.NoError(t, err)
	per := map[int64]int{}
	for _, j := range jobs {
		per[j.ServerID]++
	}
	require.Len(t, per, servers, "every server was claimed")
	for id, n := range per {
		require.Equal(t, 1, n, "server %d claimed %d times", id, n)
	}
}

// A leasing claim takes the previous binary's advisory lock in shared mode: while a previous
// binary's claim holds it (exclusively, as probe_claim does), a leasing claim waits, and goes on
// once it is released. Two leasing claims do not wait for one another (TestLeasingClaimsDoNotQueue).
func TestALeasingClaimWaitsForAPreviousBinarysClaim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
	round := testfactory.Round(ctx, t, pool, nil)

	previous, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = previous.Rollback(context.Background()) }) // before the pool closes
	_, err = previous.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, queries.ClaimLockKey)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 1, Now: &now})
		done <- err
	}()
	waitForAdvisoryWaiter(t, pool, done)
	require.NoError(t, previous.Commit(ctx))
	require.NoError(t, <-done)
}

// Two leasing claims run at once: one holds its transaction open after claiming, and another
// claims meanwhile without waiting for it.
func TestLeasingClaimsDoNotQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	for range 2 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
	}
	round := testfactory.Round(ctx, t, pool, nil)
	first, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	held, err := queries.Claim(ctx, first, queries.ClaimParams{RoundID: round, Limit: 1, Now: &now})
	require.NoError(t, err)
	require.Len(t, held, 1)

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	other, err := queries.Claim(cctx, pool, queries.ClaimParams{RoundID: round, Limit: 2, Now: &now})
	require.NoError(t, err, "the second claim waited for the first")
	require.Len(t, other, 1, "it skips the server the first holds and takes the other")
	require.NotEqual(t, held[0].ServerID, other[0].ServerID)
}

// waitForAdvisoryWaiter waits until a session of the database waits for an advisory lock; a claim
// that came back instead (done) did not wait, and fails the test.
func waitForAdvisoryWaiter(t *testing.T, db queries.DBTX, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("the leasing claim did not wait for the previous binary's lock (err: %v)", err)
		default:
		}
		var n int
		require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n))
		if n > 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "no session waits for the advisory lock")
		time.Sleep(2 * time.Millisecond)
	}
}
