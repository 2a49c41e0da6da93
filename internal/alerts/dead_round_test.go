package alerts_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Without a worker, 'alerts deliver' (Drain of the whole outbox) is where a round found dead gets
// its one round.dead alert, delivered in the same drain; draining again emits nothing more.
func TestDrainingTheOutboxAlertsARoundWhoseHeartbeatStoppedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	got := make(chan string, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("webhook-id")
	}))
	t.Cleanup(rcv.Close)
	_, err := queries.AddReceiver(ctx, pool, queries.ReceiverSecret{Name: "hook", URL: rcv.URL, Format: "slack",
		Events: []string{alerts.TypeRoundDead}}, "test")
	require.NoError(t, err)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})

	d := alerts.NewDeliverer(pool, slog.New(slog.DiscardHandler))
	for range 2 {
		s, err := d.Drain(ctx, nil)
		require.NoError(t, err)
		require.LessOrEqual(t, s.Delivered, 1)
	}
	require.Equal(t, []eventRow{{Type: alerts.TypeRoundDead, State: "dead", Previous: "running", Runs: []int64{}}}, events(ctx, t, pool))
	require.Len(t, got, 1)
	evs, err := queries.ListAlertEvents(ctx, pool, false, nil, 10)
	require.NoError(t, err)
	require.Equal(t, round, *evs[0].RoundID)
}

// A dead round whose jobs were closed as abandoned (the in-flight window passed) with no run lost
// those checks: it is alerted dead and never found recovered. One whose every job got its run
// after all is found recovered, but only once its look is due (queries.RoundRecoverRecheck keeps
// the look, which reads every job of the round, off the every-second tick): the idle tick's
// question says so too. The recovery goes to the receivers that had the round.dead and are still
// there, not to one added since.
func TestADeadRoundIsFoundRecoveredOnlyWhenEveryJobHasItsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	for _, name := range []string{"early", "gone"} {
		_, err := queries.AddReceiver(ctx, pool, queries.ReceiverSecret{Name: name, URL: "http://127.0.0.1:9/",
			Format: "slack", Events: []string{alerts.TypeRoundDead}}, "test")
		require.NoError(t, err)
	}
	srv := testfactory.Server(ctx, t, pool, nil)
	hb := time.Now().Add(-2 * time.Minute)
	lost := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	closed := time.Now().Add(-time.Minute)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &lost, FinishedAt: &closed, Outcome: "abandoned"})
	back := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	openJob := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &back})

	n, err := alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 2, n, "both alerted dead")
	_, err = queries.AddReceiver(ctx, pool, queries.ReceiverSecret{Name: "late", URL: "http://127.0.0.1:9/",
		Format: "slack", Events: []string{alerts.TypeRoundDead}}, "test")
	require.NoError(t, err)
	_, err = queries.RemoveReceiver(ctx, pool, "gone")
	require.NoError(t, err)

	// The open job's result is stored after all, as runs recover stores it.
	now := time.Now().UTC()
	_, err = queries.FinishTx(ctx, pool, queries.FinishParams{JobID: openJob, ServerID: srv, ClaimedNextCheckAt: now,
		Outcome: "ok", StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: []byte(`{"outcome":"ok"}`), Kind: "http"})
	require.NoError(t, err)
	unjudged, err := alerts.DeadRoundsUnjudged(ctx, pool)
	require.NoError(t, err)
	require.False(t, unjudged, "looked at just now: not due again yet")
	n, err = alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, n)

	_, err = pool.Exec(ctx, `UPDATE alert_dead_rounds SET checked_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	unjudged, err = alerts.DeadRoundsUnjudged(ctx, pool)
	require.NoError(t, err)
	require.True(t, unjudged)
	for range 2 {
		n, err = alerts.EmitDeadRounds(ctx, pool)
		require.NoError(t, err)
		require.LessOrEqual(t, n, 1)
		_, err = pool.Exec(ctx, `UPDATE alert_dead_rounds SET checked_at = now() - interval '1 hour'`)
		require.NoError(t, err)
	}
	evs, err := queries.ListAlertEvents(ctx, pool, false, nil, 10)
	require.NoError(t, err)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %d resolved=%t", e.Type, *e.RoundID, e.ResolvedAt != nil))
	}
	require.ElementsMatch(t, []string{
		fmt.Sprintf("round.dead %d resolved=false", lost),
		fmt.Sprintf("round.dead %d resolved=true", back),
		fmt.Sprintf("round.recovered %d resolved=false", back),
	}, got)
	var to []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(r.name ORDER BY r.name) FROM alert_deliveries AS d
		JOIN alert_events AS e ON e.id = d.event_id JOIN alert_receivers AS r ON r.id = d.receiver_id
		WHERE e.type = 'round.recovered'`).Scan(&to))
	require.Equal(t, []string{"early"}, to)
	var jobs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'probectl_alert_delivery'
		AND args->>'event_id' = (SELECT id::text FROM alert_events WHERE type = 'round.recovered')`).Scan(&jobs))
	require.Equal(t, 1, jobs, "its delivery has its River job, as every event's")
}

// The previous binary judges through alert_emit_dead_rounds, which 00022 replaced in place: it
// too leaves a round recovered before it was judged unalerted.
func TestThePreviousBinarysJudgementLeavesARecoveredRoundUnalerted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, nil)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	finish(ctx, t, pool, round, srv, "ok", nil)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT alert_emit_dead_rounds($1::interval, $2::interval, $3::integer)`,
		queries.RoundDeadAfter, queries.RoundDeadWithoutHeartbeat, 100).Scan(&n))
	require.Zero(t, n)
	var recovered bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT event_id IS NULL AND recovered_at IS NOT NULL FROM alert_dead_rounds
		WHERE round_id = $1`, round).Scan(&recovered))
	require.True(t, recovered, "judged once, as recovered")
	require.Empty(t, events(ctx, t, pool))
}

// The previous binary knows no round.recovered: its judgement (alert_emit_dead_rounds) alerts a
// round dead as before but never recovers one, which this binary's judgement does later.
func TestThePreviousBinarysJudgementSendsNoRecoveryItCannotSay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, nil)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	openJob := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	previous := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT alert_emit_dead_rounds($1::interval, $2::interval, $3::integer)`,
			queries.RoundDeadAfter, queries.RoundDeadWithoutHeartbeat, 100).Scan(&n))
		return n
	}
	require.Equal(t, 1, previous(), "alerted dead")
	now := time.Now().UTC()
	_, err := queries.FinishTx(ctx, pool, queries.FinishParams{JobID: openJob, ServerID: srv, ClaimedNextCheckAt: now,
		Outcome: "ok", StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: []byte(`{"outcome":"ok"}`), Kind: "http"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE alert_dead_rounds SET checked_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	require.Zero(t, previous(), "the previous binary recovers nothing")
	var types []string
	for _, e := range events(ctx, t, pool) {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{alerts.TypeRoundDead}, types)

	n, err := alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 1, n, "this binary recovers it")
}

// A dead round is over: the failures it held (a round's failures count once the round is judged
// on all its checks) are settled when it is judged dead, so a server that went down in it is
// alerted then, not at its next check of another round, a whole check interval later.
func TestAServerThatWentDownInARoundThatDiedIsAlertedWhenTheRoundIsJudged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	finish(ctx, t, pool, round, srv, "failed", nil)                                     // its second failure, held by its round
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round}) // left open by the death
	require.Equal(t, "up", state(ctx, t, pool, "weather").State)

	n, err := alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "down", state(ctx, t, pool, "weather").State)
	var got []string
	for _, e := range events(ctx, t, pool) {
		got = append(got, e.Type)
	}
	require.Equal(t, []string{alerts.TypeServerDown, alerts.TypeRoundDead}, got)
}

// A failure that runs recover stores for a round alerted dead is held again (the round never
// finished); the round found recovered settles it, so the server goes down then.
func TestAFailureRunsRecoverStoresForADeadRoundCountsWhenTheRoundIsFoundRecovered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	finish(ctx, t, pool, 0, srv, "ok", nil)
	finish(ctx, t, pool, 0, srv, "failed", nil)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	n, err := alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	now := time.Now().UTC()
	_, err = queries.FinishTx(ctx, pool, queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: now,
		Outcome: "failed", StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: []byte(`{"outcome":"failed"}`), Kind: "http"})
	require.NoError(t, err)
	require.Equal(t, "up", state(ctx, t, pool, "weather").State, "held: its round never finished")
	_, err = pool.Exec(ctx, `UPDATE alert_dead_rounds SET checked_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	n, err = alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "down", state(ctx, t, pool, "weather").State)
	var got []string
	for _, e := range events(ctx, t, pool) {
		got = append(got, e.Type)
	}
	require.Equal(t, []string{alerts.TypeRoundDead, alerts.TypeServerDown, alerts.TypeRoundRecovered}, got)
}

// A job closed as abandoned whose result was stored late after all (runs recover replayed it) is
// not lost: a dead round whose every job has its run, late or not, is recovered.
func TestADeadRoundWhoseAbandonedJobGotItsLateRunIsRecovered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	srv := testfactory.Server(ctx, t, pool, nil)
	hb := time.Now().Add(-2 * time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	closed := time.Now().Add(-time.Minute)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round, FinishedAt: &closed,
		Outcome: "abandoned"})
	now := time.Now().UTC()
	_, err := queries.FinishTx(ctx, pool, queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: now,
		Outcome: "ok", StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: []byte(`{"outcome":"ok"}`), Kind: "http"})
	require.NoError(t, err)
	var runs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM probe_runs WHERE job_id = $1`, job).Scan(&runs))
	require.Equal(t, 1, runs, "stored late")

	n, err := alerts.EmitDeadRounds(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, events(ctx, t, pool))
}
