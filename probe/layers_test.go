package probe

// The claim's lock, and each of the four layers of the invariant (docs/invariant.md) holding on
// its own with the others switched off. Two races are forced, both without sleeps:
//
//   - concurrent claims: two claims read the same due servers at once. The test holds the round
//     rows, so each claim, once it has read and inserted, blocks in its foreign-key check; when
//     both are blocked in the database (or one is, and the other, skipping the rows the first
//     locked, came back) the test lets go.
//   - a claim in the finish gap: a finish is parked between its two writes (a hook) and a second
//     round claims meanwhile.
//
// The switches: the lock (a lock-less claim installed in the test database), the write
// order (Round.WriteOrder puts the incident's order back), the spacing guard (minimum spacing 0)
// and the unique index (dropped in the test database). The claim's lease (migration 00009: a
// claimed server is not due until its job's window ends) is a fifth guard, on top of the four, and
// switched off like them (the claim of the incident's time installed in the test database,
// incident.UnleasedClaim); the four are each proven with it off.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/incident"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// layers says which layers of the invariant are on.
type layers struct{ lock, order, spacing, index, lease bool }

func (l layers) spacingSetting() time.Duration {
	if l.spacing {
		return 10 * time.Minute
	}
	return 0
}

// prepare switches the database's layers: the lock and the unique index live there.
func (l layers) prepare(t *testing.T, db queries.DBTX) {
	t.Helper()
	if !l.index {
		dropUniqueIndex(t, db)
	}
	if !l.lease {
		_, err := incident.UnleasedClaim(t.Context(), db)
		require.NoError(t, err)
	}
	if !l.lock {
		installLocklessClaim(t, db)
	}
}

// claimFunc is one way to claim due servers for a round; it returns how many it took.
type claimFunc func(ctx context.Context, db queries.DBTX, round int64) (int, error)

// realClaim calls probe_claim_lease.
func realClaim(l layers) claimFunc {
	return func(ctx context.Context, db queries.DBTX, round int64) (int, error) {
		jobs, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: 10,
			MinSpacing: l.spacingSetting()})
		return len(jobs), err
	}
}

// lockInsideClaim calls the broken variant (testdata/claim_lock_inside.sql), which takes the same
// lock inside its reading statement, to claim up to limit servers.
func lockInsideClaim(t testing.TB, limit int) claimFunc {
	t.Helper()
	q := testSQL(t, "claim_lock_inside_call.sql")
	return func(ctx context.Context, db queries.DBTX, round int64) (int, error) {
		rows, err := db.Query(ctx, q, round, 0, limit)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		return n, rows.Err()
	}
}

// raceTwoClaims runs two claims at once on the due servers and returns how many servers were
// claimed more than once.
func raceTwoClaims(t *testing.T, db *pgxpool.Pool, claim claimFunc) int {
	t.Helper()
	ctx := t.Context()
	rounds := []int64{testfactory.Round(ctx, t, db, nil), testfactory.Round(ctx, t, db, nil)}

	holder, err := db.Begin(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, testSQL(t, "hold_round_rows.sql"))
	require.NoError(t, err)

	var wg sync.WaitGroup
	var returned atomic.Int32
	errs := make([]error, 2)
	for i, round := range rounds {
		wg.Go(func() {
			_, errs[i] = claim(ctx, db, round)
			returned.Add(1)
		})
	}
	waitForLockWaitersOr(t, db, 2, &returned)
	require.NoError(t, holder.Commit(ctx))
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	return duplicates(t, db, rounds...)
}

// duplicates counts the servers with more than one job in the rounds.
func duplicates(t *testing.T, db queries.DBTX, rounds ...int64) int {
	t.Helper()
	jobs, err := queries.ListRoundJobs(t.Context(), db, rounds...)
	require.NoError(t, err)
	require.NotEmpty(t, jobs, "the race claimed nothing at all")
	per := map[int64]int{}
	for _, j := range jobs {
		per[j.ServerID]++
	}
	n := 0
	for _, c := range per {
		if c > 1 {
			n++
		}
	}
	return n
}

func TestManyConcurrentClaimersClaimEachServerOnceWithOnlyTheLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url, dbtest.MaxConns(16))
	lockOnly := layers{lock: true}
	lockOnly.prepare(t, pool)
	dueServers(t, pool, 4)
	var rounds []int64
	for range 16 {
		rounds = append(rounds, testfactory.Round(ctx, t, pool, nil))
	}
	// Each claim that takes anything takes at least one of the 4 servers, which then have an open
	// job: a round's fifth claim at the latest comes back empty. A claim that keeps taking servers
	// past that (say, the in-flight guard gone) fails the test instead of looping forever.
	const maxClaims = 5
	var wg sync.WaitGroup
	for _, round := range rounds {
		wg.Go(func() {
			for claim := 1; claim <= maxClaims; claim++ {
				jobs, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 2, MinSpacing: 0})
				if err != nil || len(jobs) == 0 {
					assert.NoError(t, err) // not the test goroutine: no FailNow
					return
				}
			}
			t.Errorf("round %d: %d claims still took servers, of 4 due: the claims never run dry", round, maxClaims)
		})
	}
	wg.Wait()
	require.Zero(t, duplicates(t, pool, rounds...))
}

func TestTheLockTakenInsideTheReadingStatementDoubleClaims(t *testing.T) {
	t.Parallel()
	lockOnly := layers{lock: true}
	cases := []struct {
		name  string
		claim func(t *testing.T) claimFunc
		want  int
	}{
		{"the lock in its own statement before the read claims each server once",
			func(*testing.T) claimFunc { return realClaim(lockOnly) }, 0},
		{"the lock inside the reading statement claims every server twice",
			func(t *testing.T) claimFunc { return lockInsideClaim(t, 10) }, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := testDB(t)
			lockOnly.prepare(t, pool)
			_, err := pool.Exec(t.Context(), testSQL(t, "claim_lock_inside.sql"))
			require.NoError(t, err)
			dueServers(t, pool, 3)
			require.Equal(t, tc.want, raceTwoClaims(t, pool, tc.claim(t)))
		})
	}
}

func TestEachLayerAloneHoldsTheInvariantAgainstTheRaceItCovers(t *testing.T) {
	t.Parallel()
	all := layers{lock: true, order: true, spacing: true, index: true, lease: true}
	cases := []struct {
		name   string
		race   string // concurrent | gap
		layers layers
		dup    bool
	}{
		{"with every layer off two concurrent claims both take the servers", "concurrent", layers{}, true},
		{"the lock alone keeps concurrent claims apart", "concurrent", layers{lock: true}, false},
		{"the unique index alone keeps concurrent claims apart", "concurrent", layers{index: true}, false},
		{"the spacing guard alone cannot see a claim that is not committed yet", "concurrent", layers{spacing: true}, true},
		{"the write order alone has nothing to say about concurrent claims", "concurrent", layers{order: true}, true},
		{"the lease alone cannot see a claim that is not committed yet", "concurrent", layers{lease: true}, true},
		{"the row locks with the lease keep concurrent claims apart", "concurrent", layers{lock: true, lease: true}, false},
		{"with every layer on concurrent claims take each server once", "concurrent", all, false},

		{"with every layer off a claim in the finish gap takes the server again", "gap", layers{}, true},
		{"the write order alone leaves no gap to claim in", "gap", layers{order: true}, false},
		{"the spacing guard alone refuses the server in the gap", "gap", layers{spacing: true}, false},
		{"the lock alone does not close the gap, as in the incident", "gap", layers{lock: true}, true},
		{"the unique index alone does not close the gap, since the job is finished", "gap", layers{index: true}, true},
		{"the lease alone keeps the server out of the due range in the gap", "gap", layers{lease: true}, false},
		{"with every layer on nothing is claimed in the gap", "gap", all, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dup int
			switch tc.race {
			case "concurrent":
				pool := testDB(t)
				tc.layers.prepare(t, pool)
				dueServers(t, pool, 3)
				dup = raceTwoClaims(t, pool, realClaim(tc.layers))
			case "gap":
				dup = len(claimInTheGap(t, tc.layers))
			}
			require.Equal(t, tc.dup, dup > 0, "%s: %d server(s) claimed twice", describe(tc.layers), dup)
		})
	}
}

func describe(l layers) string {
	var on []string
	for name, v := range map[string]bool{"lock": l.lock, "order": l.order, "spacing": l.spacing, "index": l.index, "lease": l.lease} {
		if v {
			on = append(on, name)
		}
	}
	return fmt.Sprintf("layers on: [%s]", strings.Join(on, " "))
}

// claimInTheGap parks a one-server round's finish between its two writes (advance-first), lets a
// second round claim meanwhile and returns what that claim took, with the given layers.
func claimInTheGap(t *testing.T, l layers) []queries.ClaimedJob {
	t.Helper()
	ctx := t.Context()
	pool := testDB(t)
	l.prepare(t, pool)
	dueServers(t, pool, 1)
	parked, release := make(chan struct{}), make(chan struct{})
	s := testSettings(FinishAdvanceFirst)
	s.MinSpacing = settings.Duration(l.spacingSetting())
	// One claim only: with the incident's order the round's own invocation could otherwise claim
	// the server again in the gap, racing the second claimer this test is about.
	s.ClaimLimit = 1
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{},
		testKnobs: testKnobs{hooks: hooks{betweenFinishWrites: func(context.Context, queries.ClaimedJob) {
			close(parked)
			<-release
		}}}}
	if !l.order {
		r.WriteOrder = incidentOrder()
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx)
		done <- err
	}()
	select {
	case <-parked:
	case err := <-done:
		t.Fatalf("the round ended without reaching the gap: %v", err)
	}
	other := testfactory.Round(ctx, t, pool, nil)
	got, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: other, Limit: 10,
		MinSpacing: l.spacingSetting()})
	close(release)
	require.NoError(t, err)
	require.NoError(t, <-done)
	return got
}
