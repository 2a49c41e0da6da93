package release_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/release"
)

// deployed is the incident's situation: v1 ran sequentially, v2 made it parallel and approved
// both ways back.
func deployed(t *testing.T, pool *pgxpool.Pool) (v1, v2 release.Release) {
	t.Helper()
	v1 = record(t, pool, "v1", sequential, release.WayPrevious)
	v2 = record(t, pool, "v2", parallel, release.WayPrevious, release.WayFanoutOff)
	return v1, v2
}

func rollback(t *testing.T, pool *pgxpool.Pool, way release.Way) *release.RollbackPlan {
	t.Helper()
	plan, err := release.Rollback(t.Context(), pool, release.RollbackRequest{Way: way, Actor: "bo", Reason: "duplicates in 20:55"})
	require.NoError(t, err)
	return plan
}

func history(t *testing.T, pool *pgxpool.Pool) *release.History {
	t.Helper()
	h, err := release.ReadHistory(t.Context(), pool, 100)
	require.NoError(t, err)
	return h
}

func TestRollbackToPreviousReactivatesTheReleaseBeforeAndRecordsWhoAndWhy(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	v1, v2 := deployed(t, pool)

	plan := rollback(t, pool, release.WayPrevious)

	require.False(t, plan.AlreadyDone)
	require.Equal(t, v2.ID, plan.From.ID)
	require.Equal(t, v1.ID, plan.To.ID)
	h := history(t, pool)
	require.Equal(t, v1.ID, active(t, h).ID)
	rolledBack := h.Releases[0]
	require.Equal(t, v2.ID, rolledBack.ID)
	require.NotNil(t, rolledBack.RolledBackAt)
	require.Equal(t, "bo", *rolledBack.RolledBackBy)
	require.Equal(t, "duplicates in 20:55", *rolledBack.RollbackReason)
	ev := h.Events[0]
	require.Equal(t, release.ActionToPrevious, ev.Action)
	require.Equal(t, v1.ID, ev.ReleaseID)
	require.Equal(t, v2.ID, *ev.FromReleaseID)
	require.Equal(t, "bo", ev.Actor)
	require.False(t, ev.Forced)
	require.Len(t, h.Events, 3, "two deploys and one rollback, all kept")
}

func TestRollbackFanoutOffKeepsTheVersionWithoutFanout(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	v1, v2 := deployed(t, pool)

	plan := rollback(t, pool, release.WayFanoutOff)

	to := plan.To
	require.NotZero(t, to.ID)
	require.True(t, to.Active)
	require.Equal(t, "v2", to.Version)
	require.Equal(t, release.KindFanoutOff, to.Kind)
	require.Equal(t, &v2.ID, to.DerivedFrom)
	require.Equal(t, &v1.ID, to.PreviousID, "--to-previous from here goes to the version before, not back to the fan-out")
	want := parallel
	want.Fanout, want.Concurrency = 0, 1
	require.Equal(t, want, to.Carried)

	// The next round reads the active release and runs with the new settings.
	r, err := release.ForRound(t.Context(), pool, "v2", false)
	require.NoError(t, err)
	require.Equal(t, want, r.Carried)

	// Going further back from the fan-out-off release reaches v1.
	plan = rollback(t, pool, release.WayPrevious)
	require.Equal(t, v1.ID, plan.To.ID)
}

func TestRollbackIsRefusedWhenThePlanDidNotApproveIt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		approved []release.Way
		way      release.Way
	}{
		{"going to the previous release when only fanout-off was approved", []release.Way{release.WayFanoutOff}, release.WayPrevious},
		{"switching fan-out off when only previous was approved", []release.Way{release.WayPrevious}, release.WayFanoutOff},
		{"either way when none was approved", nil, release.WayPrevious},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := tmpl.Pool(t)
			record(t, pool, "v1", sequential)
			v2 := record(t, pool, "v2", parallel, tc.approved...)
			before := history(t, pool)

			_, err := release.Rollback(t.Context(), pool, release.RollbackRequest{Way: tc.way, Actor: "bo"})

			var notApproved *release.NotApprovedError
			require.ErrorAs(t, err, &notApproved)
			require.Equal(t, exit.Usage, exit.Code(err))
			require.Contains(t, asFlags(err), "--force")
			require.Equal(t, v2.ID, notApproved.Release.ID)
			require.Equal(t, before, history(t, pool), "nothing changed")
		})
	}
}

func TestForcedRollbackNeedsAReasonAndIsRecordedAsForced(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	v1 := record(t, pool, "v1", sequential)
	record(t, pool, "v2", parallel) // approved no way back

	_, err := release.Rollback(t.Context(), pool, release.RollbackRequest{Way: release.WayPrevious, Actor: "bo", Force: true})
	require.Contains(t, asFlags(err), "--reason")
	require.Equal(t, exit.Usage, exit.Code(err))

	plan, err := release.Rollback(t.Context(), pool, release.RollbackRequest{
		Way: release.WayPrevious, Actor: "bo", Force: true, Reason: "plan forgot the way back"})
	require.NoError(t, err)
	require.True(t, plan.Forced)
	h := history(t, pool)
	require.Equal(t, v1.ID, active(t, h).ID)
	require.True(t, h.Events[0].Forced)
	require.Equal(t, "plan forgot the way back", h.Events[0].Reason)
}

func TestASecondRollbackToTheSameStateChangesNothing(t *testing.T) {
	t.Parallel()
	for _, way := range release.Ways {
		t.Run(string(way), func(t *testing.T) {
			t.Parallel()
			pool := tmpl.Pool(t)
			deployed(t, pool)
			first := rollback(t, pool, way)
			before := history(t, pool)

			second := rollback(t, pool, way)

			require.True(t, second.AlreadyDone)
			require.Nil(t, second.Event)
			require.Equal(t, first.To.ID, second.To.ID)
			require.NotNil(t, second.Done, "it names the rollback that got there")
			require.Equal(t, first.Event.ID, second.Done.ID)
			require.Equal(t, before, history(t, pool))
		})
	}
}

func TestRollbackNeverWritesTheDataTables(t *testing.T) {
	t.Parallel()
	both := []release.Way{release.WayPrevious, release.WayFanoutOff}
	cases := []struct {
		name     string
		approved []release.Way
		req      release.RollbackRequest
	}{
		{"to the previous release", both, release.RollbackRequest{Way: release.WayPrevious, Actor: "bo"}},
		{"with fan-out off", both, release.RollbackRequest{Way: release.WayFanoutOff, Actor: "bo"}},
		{"forced past the plan", nil, release.RollbackRequest{Way: release.WayFanoutOff, Actor: "bo", Force: true, Reason: "r"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := tmpl.Pool(t)
			ctx := t.Context()
			plantData(t, ctx, pool)
			record(t, pool, "v1", sequential)
			record(t, pool, "v2", parallel, tc.approved...)
			before := fingerprint(t, pool)

			plan, err := release.Rollback(ctx, pool, tc.req)
			require.NoError(t, err)
			require.NotNil(t, plan.Event)

			require.Equal(t, before, fingerprint(t, pool))
		})
	}
}

func TestPlanRollbackChangesNothing(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	v1, v2 := deployed(t, pool)
	before := history(t, pool)

	plan, err := release.PlanRollback(t.Context(), pool, release.RollbackRequest{Way: release.WayPrevious, Actor: "bo"})

	require.NoError(t, err)
	require.Equal(t, v2.ID, plan.From.ID)
	require.Equal(t, v1.ID, plan.To.ID)
	require.Nil(t, plan.Event)
	require.Equal(t, before, history(t, pool))
}

func TestRollbackRefusesWhenTheActiveReleaseChangedSinceTheConfirmedPlan(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	_, v2 := deployed(t, pool)
	v3 := record(t, pool, "v3", parallel, release.WayPrevious)

	_, err := release.Rollback(t.Context(), pool, release.RollbackRequest{Way: release.WayPrevious, Actor: "bo", ExpectActive: v2.ID})

	var changed *release.ActiveChangedError
	require.ErrorAs(t, err, &changed)
	require.Equal(t, v3.ID, changed.Now)
	require.Equal(t, v3.ID, active(t, history(t, pool)).ID)
}

func TestRollbackWithNowhereToGoIsBadInput(t *testing.T) {
	t.Parallel()
	t.Run("no release at all", func(t *testing.T) {
		t.Parallel()
		_, err := release.Rollback(t.Context(), tmpl.Pool(t), release.RollbackRequest{Way: release.WayPrevious, Actor: "bo"})
		require.ErrorContains(t, err, "no release is active")
		require.Equal(t, exit.Usage, exit.Code(err))
	})
	t.Run("the first release has no previous one", func(t *testing.T) {
		t.Parallel()
		pool := tmpl.Pool(t)
		record(t, pool, "v1", sequential, release.WayPrevious)
		_, err := release.Rollback(t.Context(), pool, release.RollbackRequest{Way: release.WayPrevious, Actor: "bo"})
		require.ErrorContains(t, err, "no previous release")
		require.Equal(t, exit.Usage, exit.Code(err))
	})
}

// TestTwoRollbacksAtOnceApplyOnce holds the first rollback inside its transaction, lock taken,
// and starts a second: the second must wait for the lock, then find the rollback already done.
// Without the lock the second applies while the first is held, and the first then fails on the
// last line of defence (its deactivate matches no row): one of two people gets an error instead
// of "already done".
func TestTwoRollbacksAtOnceApplyOnce(t *testing.T) {
	t.Parallel()
	for _, locked := range []bool{true, false} {
		name := "with the lock the second waits and finds it done"
		if !locked {
			name = "without the lock the second applies first and the first fails"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := tmpl.Pool(t)
			ctx := t.Context()
			deployed(t, pool)

			holding, proceed := make(chan struct{}), make(chan struct{})
			first := release.RollbackRequest{Way: release.WayPrevious, Actor: "first"}
			release.SetAfterLock(&first, func() { close(holding); <-proceed })
			second := release.RollbackRequest{Way: release.WayPrevious, Actor: "second"}
			if !locked {
				release.WithoutLock(&first)
				release.WithoutLock(&second)
			}
			firstDone := goRollback(ctx, pool, first)
			<-holding

			secondDone := goRollback(ctx, pool, second)
			if locked {
				waitForLockWaiter(t, pool)
				select {
				case r := <-secondDone:
					t.Fatalf("second rollback finished while the first held the lock: %+v", r)
				default:
				}
			} else {
				r := <-secondDone
				require.NoError(t, r.err)
				require.False(t, r.plan.AlreadyDone)
			}
			close(proceed)
			f := <-firstDone
			if locked {
				require.NoError(t, f.err)
				require.False(t, f.plan.AlreadyDone)
			} else {
				require.ErrorContains(t, f.err, "deactivate release: changed 0 rows")
			}

			require.Equal(t, 1, rollbacksRecorded(t, pool), "one rollback recorded")
			if locked {
				s := <-secondDone
				require.NoError(t, s.err)
				require.True(t, s.plan.AlreadyDone, "the second saw the first's result")
			}
		})
	}
}

// TestTheActiveRowLockHoldsOffARollbackThatSkipsTheReleasesLock runs two rollbacks that skip the
// releases lock, as a writer that forgot it would, and holds the first inside its transaction: the
// lock on the active row alone must make the second wait. When the first commits, the row the
// second waited on is no longer active, so the second finds no active release and changes
// nothing: one rollback is recorded, and the first, which held the row, succeeds.
func TestTheActiveRowLockHoldsOffARollbackThatSkipsTheReleasesLock(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	ctx := t.Context()
	deployed(t, pool)

	holding, proceed := make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(proceed) })
	t.Cleanup(letGo) // a failed assertion must not leave the first rollback's transaction open
	first := release.RollbackRequest{Way: release.WayPrevious, Actor: "first"}
	release.SetAfterLock(&first, func() { close(holding); <-proceed })
	release.WithoutAdvisoryLock(&first)
	second := release.RollbackRequest{Way: release.WayPrevious, Actor: "second"}
	release.WithoutAdvisoryLock(&second)

	firstDone := goRollback(ctx, pool, first)
	<-holding
	secondDone := goRollback(ctx, pool, second)
	waitForLockWaiter(t, pool)
	select {
	case r := <-secondDone:
		t.Fatalf("second rollback finished while the first held the active row: %+v", r)
	default:
	}
	letGo()

	f := <-firstDone
	require.NoError(t, f.err)
	require.False(t, f.plan.AlreadyDone)
	s := <-secondDone
	require.ErrorContains(t, s.err, "no release is active")

	require.Equal(t, 1, rollbacksRecorded(t, pool), "one rollback recorded")
}

// rollbacksRecorded counts the release events that are not deploys.
func rollbacksRecorded(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	n := 0
	for _, ev := range history(t, pool).Events {
		if ev.Action != release.ActionDeploy {
			n++
		}
	}
	return n
}

type rollbackResult struct {
	plan *release.RollbackPlan
	err  error
}

func goRollback(ctx context.Context, pool *pgxpool.Pool, req release.RollbackRequest) <-chan rollbackResult {
	done := make(chan rollbackResult, 1)
	go func() {
		plan, err := release.Rollback(ctx, pool, req)
		done <- rollbackResult{plan, err}
	}()
	return done
}

// waitForLockWaiter returns once a session of this database waits for a lock: the observable
// state the test needs, polled on the database's own clock (pg_sleep), not guessed with a sleep.
func waitForLockWaiter(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for range 2000 {
		var waiting bool
		err := pool.QueryRow(t.Context(), `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		require.NoError(t, err)
		if waiting {
			return
		}
		_, err = pool.Exec(t.Context(), "SELECT pg_sleep(0.005)")
		require.NoError(t, err)
	}
	t.Fatal("the second rollback never waited for the lock")
}
