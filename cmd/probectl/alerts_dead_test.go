package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// deadRoundReceivers is a Slack receiver and an Alertmanager receiver, both for round.dead only,
// recording what each was sent.
type deadRoundReceivers struct {
	mu    sync.Mutex
	slack []string
	am    []amPosted
}

// amPosted is one alert an Alertmanager receiver was posted.
type amPosted struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   *time.Time        `json:"endsAt"`
}

func newDeadRoundReceivers(t *testing.T, url string) *deadRoundReceivers {
	t.Helper()
	r := &deadRoundReceivers{}
	slack := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		var body struct {
			Text string `json:"text"`
		}
		_ = json.NewDecoder(req.Body).Decode(&body)
		r.mu.Lock()
		r.slack = append(r.slack, body.Text)
		r.mu.Unlock()
	}))
	t.Cleanup(slack.Close)
	am := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		var body []amPosted
		_ = json.NewDecoder(req.Body).Decode(&body)
		r.mu.Lock()
		r.am = append(r.am, body...)
		r.mu.Unlock()
	}))
	t.Cleanup(am.Close)
	for _, add := range [][]string{{"chat", slack.URL, "slack"}, {"am", am.URL, "alertmanager"}} {
		res := runCLI(t, "--database-url", url, "receivers", "add", add[0], "--url", add[1], "--format", add[2],
			"--events", "round.dead")
		require.Equal(t, 0, res.Code, res.Stderr)
	}
	return r
}

func (r *deadRoundReceivers) sent() ([]string, []amPosted) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.slack...), append([]amPosted(nil), r.am...)
}

// deadRoundWithSpool is a round whose process died (its heartbeat stopped two minutes ago) with one
// job open, whose result waits in the spool directory it returns, for runs recover.
func deadRoundWithSpool(ctx context.Context, t *testing.T, pool *pgxpool.Pool) (round int64, dir string) {
	t.Helper()
	srv := testfactory.Server(ctx, t, pool, nil)
	hb := time.Now().Add(-2 * time.Minute)
	round = testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round})
	dir = filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	file := filepath.Join(dir, fmt.Sprintf("round-%d-pid-1-00000000.jsonl", round))
	line := testfactory.SpoolLine(ctx, t, pool, round, srv, job, map[string]any{"outcome": "ok"}, "finish job: connection refused")
	require.NoError(t, os.WriteFile(file, line, 0o600))
	return round, dir
}

// recheckDue makes every round alerted dead due its next look for a recovery: the test does not
// wait out queries.RoundRecoverRecheck.
func recheckDue(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(ctx, `UPDATE alert_dead_rounds SET checked_at = now() - interval '1 hour'`)
	require.NoError(t, err)
}

// A round alerted dead whose every job runs recover stores after all gets one resolution: a
// round.recovered event to the receivers that had its round.dead (Slack: a line saying so;
// Alertmanager: the ProbectlRoundDead alert of that round posted again with its endsAt), and its
// round.dead is listed resolved. Judged again, nothing more is sent.
func TestARoundAlertedDeadThatRunsRecoverCompletesIsResolved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedDB(t)
	rcv := newDeadRoundReceivers(t, url)
	round, dir := deadRoundWithSpool(ctx, t, pool)

	res := runCLI(t, "--database-url", url, "alerts", "deliver", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	slack, am := rcv.sent()
	require.Equal(t, []string{fmt.Sprintf("round %d is dead: its heartbeat stopped", round)}, slack)
	require.Len(t, am, 1)
	require.Equal(t, map[string]string{"alertname": "ProbectlRoundDead", "round": fmt.Sprint(round)}, am[0].Labels)
	deadAt := am[0].StartsAt

	// Not recovered yet (its job is open): a look finds nothing to say.
	recheckDue(ctx, t, pool)
	require.Equal(t, 0, runCLI(t, "--database-url", url, "alerts", "deliver").Code)
	slack, _ = rcv.sent()
	require.Len(t, slack, 1)

	res = runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	recheckDue(ctx, t, pool)
	before := time.Now()
	res = runCLI(t, "--database-url", url, "alerts", "deliver")
	require.Equal(t, 0, res.Code, res.Stderr)
	slack, am = rcv.sent()
	require.Equal(t, []string{fmt.Sprintf("round %d is dead: its heartbeat stopped", round),
		fmt.Sprintf("round %d recovered: every job it claimed was stored after all", round)}, slack)
	require.Len(t, am, 2)
	require.Equal(t, am[0].Labels, am[1].Labels, "the recovery resolves the dead alert: the same labels")
	require.True(t, am[1].StartsAt.Equal(deadAt), "startsAt is the dead alert's")
	require.NotNil(t, am[1].EndsAt)
	require.WithinDuration(t, before, *am[1].EndsAt, time.Minute)

	var listed []struct {
		Type       string     `json:"type"`
		RoundID    *int64     `json:"round_id"`
		ResolvedAt *time.Time `json:"resolved_at"`
	}
	res = runCLI(t, "--database-url", url, "alerts", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &listed), res.Stdout)
	require.Len(t, listed, 2)
	require.Equal(t, "round.recovered", listed[0].Type)
	require.Equal(t, "round.dead", listed[1].Type)
	require.NotNil(t, listed[1].ResolvedAt, "the round.dead is resolved")

	recheckDue(ctx, t, pool)
	require.Equal(t, 0, runCLI(t, "--database-url", url, "alerts", "deliver").Code)
	slack, am = rcv.sent()
	require.Len(t, slack, 2, "found recovered once")
	require.Len(t, am, 2)
}

// A dead round whose every job runs recover stores before anyone judges it was never lost: it is
// not alerted, then or later.
func TestARoundRecoveredBeforeItIsJudgedIsNotAlertedDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedDB(t)
	rcv := newDeadRoundReceivers(t, url)
	_, dir := deadRoundWithSpool(ctx, t, pool)

	res := runCLI(t, "--database-url", url, "runs", "recover", "--spool-dir", dir)
	require.Equal(t, 0, res.Code, res.Stderr)
	for range 2 {
		res = runCLI(t, "--database-url", url, "alerts", "deliver", "-o", "json")
		require.Equal(t, 0, res.Code, res.Stderr)
		require.JSONEq(t, `{"attempts":0,"delivered":0,"failed":0,"pending":0,"resent":0}`, res.Stdout)
		recheckDue(ctx, t, pool)
	}
	slack, am := rcv.sent()
	require.Empty(t, slack)
	require.Empty(t, am)
	res = runCLI(t, "--database-url", url, "alerts", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.JSONEq(t, "[]", res.Stdout)
}

// run round alone, with no worker and no 'alerts deliver' in any crontab, judges the rounds that
// died before it and delivers their round.dead before it exits: once, however many rounds run.
func TestRunRoundAloneAlertsAnEarlierRoundFoundDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedDB(t)
	rcv := newDeadRoundReceivers(t, url)
	round, _ := deadRoundWithSpool(ctx, t, pool)

	for range 2 {
		res := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets",
			"--spool-dir", t.TempDir())
		require.Equal(t, 0, res.Code, res.Stderr)
	}
	slack, am := rcv.sent()
	require.Equal(t, []string{fmt.Sprintf("round %d is dead: its heartbeat stopped", round)}, slack)
	require.Len(t, am, 1)
	var pending int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM alert_deliveries WHERE state = 'pending'`).Scan(&pending))
	require.Zero(t, pending)
	require.False(t, strings.Contains(slack[0], "recovered"))
}
