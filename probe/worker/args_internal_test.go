package worker

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/golden"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// argsFixture is the invocation both testdata files hold: the golden one in this release's shape,
// invocation_args_previous.json in the previous release's (written by that release's code).
func argsFixture() InvocationArgs {
	rel := int64(3)
	return InvocationArgs{RoundID: 42, Invocation: 1, StartedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		TimeoutSeconds: 350, Settings: settings.Settings{
			Carried: settings.Carried{Fanout: 2, ClaimLimit: 5, Concurrency: 3, MinSpacing: settings.Duration(10 * time.Minute),
				RequestTimeout: settings.Duration(10 * time.Second), MaxDuration: settings.Duration(4 * time.Minute),
				Finish: "tx", Contact: "https://probe.example/about"},
			MaxBodyBytes: 1 << 20, AllowPrivateTargets: true, Trigger: "cron", Version: "v1.4.0", ReleaseID: &rel}}
}

// The args River stores for an invocation are a contract with the next release's workers: their
// shape changes only on purpose.
func TestInvocationArgsKeepTheirPinnedShape(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(argsFixture(), "", "  ")
	require.NoError(t, err)
	golden.Require(t, "testdata/invocation_args.golden", append(got, '\n'))

	var back InvocationArgs
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, argsFixture(), back, "this release's shape reads back as written")
}

// A worker of the previous release reads an invocation this release queued with the same
// settings: it decodes them untagged, by Go field name (a rolling deploy, or one version back).
func TestThePreviousReleasesWorkerReadsAnInvocationThisReleaseQueued(t *testing.T) {
	t.Parallel()
	queued, err := json.Marshal(argsFixture())
	require.NoError(t, err)
	var previous struct {
		RoundID        int64            `json:"round_id"`
		Invocation     int              `json:"invocation"`
		StartedAt      time.Time        `json:"started_at"`
		Settings       previousSettings `json:"settings"`
		TimeoutSeconds float64          `json:"timeout_seconds"`
	}
	require.NoError(t, json.Unmarshal(queued, &previous))
	want := argsFixture()
	require.Equal(t, want.Settings, previous.Settings.settings(), "no setting read as zero")
	require.Equal(t, want.RoundID, previous.RoundID)
	require.Equal(t, want.StartedAt, previous.StartedAt)
}

func TestAnInvocationQueuedByThePreviousReleaseReadsTheSame(t *testing.T) {
	t.Parallel()
	prev, err := os.ReadFile("testdata/invocation_args_previous.json")
	require.NoError(t, err)
	var got InvocationArgs
	require.NoError(t, json.Unmarshal(prev, &got))
	require.Equal(t, argsFixture(), got, "untagged Go field names and nanoseconds read as this release's settings")

	// previousArgs writes that shape, for the test below that queues it.
	again, err := json.MarshalIndent(previousArgs(got), "", "  ")
	require.NoError(t, err)
	require.JSONEq(t, string(prev), string(again))
}

// previousArgs is a in the previous release's shape.
func previousArgs(a InvocationArgs) any {
	s := a.Settings
	return struct {
		RoundID        int64            `json:"round_id"`
		Invocation     int              `json:"invocation"`
		StartedAt      time.Time        `json:"started_at"`
		Settings       previousSettings `json:"settings"`
		TimeoutSeconds float64          `json:"timeout_seconds"`
	}{a.RoundID, a.Invocation, a.StartedAt, previousOf(s), a.TimeoutSeconds}
}

// recordingChecker answers ok and keeps the settings each invocation's checker was made with.
type recordingChecker struct {
	mu   sync.Mutex
	seen []probe.Settings
}

func (c *recordingChecker) newChecker(s probe.Settings) probe.Checker {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, s)
	return c
}

func (c *recordingChecker) Check(context.Context, check.Target) check.Result {
	return check.Result{Outcome: check.OutcomeOK}
}

func (c *recordingChecker) settings(t *testing.T) probe.Settings {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.seen, 1, "one invocation ran")
	return c.seen[0]
}

// runWorker runs a worker process in this test until the round of q is over.
func runWorker(t *testing.T, pool *pgxpool.Pool, cfg Config, q Queued) *probe.Summary {
	t.Helper()
	ctx := context.Background()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(wctx, cfg) }()
	sum, err := WaitRound(ctx, pool, q)
	require.NoError(t, err)
	stop()
	require.NoError(t, <-done)
	return sum
}

func TestAWorkerRunsAnInvocationQueuedInThePreviousReleasesShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	recordRelease(t, pool, 0)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: "http://127.0.0.1:1/"})
	s, err := Settings(ctx, pool, "dev", probe.TriggerManual, true)
	require.NoError(t, err)
	q, err := EnqueueRound(ctx, pool, s, "")
	require.NoError(t, err)

	// A worker of the previous release queued it: rewrite the stored args in its shape.
	var stored InvocationArgs
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx, "SELECT args FROM river_job WHERE kind = $1", InvocationArgs{}.Kind()).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &stored))
	prev, err := json.Marshal(previousArgs(stored))
	require.NoError(t, err)
	require.Contains(t, string(prev), `"MinSpacing":600000000000`, "the previous shape: Go names, nanoseconds")
	_, err = pool.Exec(ctx, "UPDATE river_job SET args = $1 WHERE kind = $2", prev, InvocationArgs{}.Kind())
	require.NoError(t, err)

	c := &recordingChecker{}
	sum := runWorker(t, pool, Config{Pool: pool, Log: testLog(t), MaxWorkers: 1, Version: "dev", AllowPrivateTargets: true,
		NewChecker: c.newChecker}, q)
	require.Equal(t, 1, sum.Runs, "the invocation ran and stored its check")
	got := c.settings(t)
	require.Equal(t, s.Carried, got.Carried, "with the settings it was queued with")
	require.Equal(t, s.MaxBodyBytes, got.MaxBodyBytes)
}

// A round a worker starts records the settings its checks run with: the worker's
// --allow-private-targets, and the contact of the release.
func TestAWorkersRoundRecordsTheSettingsItsChecksUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 0, 1, 1
	rs.Contact = "https://probe.example/about"
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Every: time.Hour, Actor: "test"})
	require.NoError(t, err)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: "http://127.0.0.1:1/"})

	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	id, err := Tick(ctx, pool, "dev", "", true, client) // the tick of a worker run with --allow-private-targets
	require.NoError(t, err)
	require.NotZero(t, id)
	var record settings.Record
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx, "SELECT settings FROM probe_rounds WHERE id = $1", id).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &record))

	c := &recordingChecker{}
	sum := runWorker(t, pool, Config{Pool: pool, Log: testLog(t), MaxWorkers: 1, Version: "dev", AllowPrivateTargets: true,
		NewChecker: c.newChecker}, Queued{RoundID: id, Settings: record.Settings})
	require.Equal(t, 1, sum.Runs)
	got := c.settings(t)
	require.True(t, got.AllowPrivateTargets)
	require.Equal(t, got.AllowPrivateTargets, record.AllowPrivateTargets, "the round records the address policy its checks ran with")
	require.Equal(t, "https://probe.example/about", got.Contact, "the release's contact reaches the worker's checks")
	require.Equal(t, got.Contact, record.Contact, "and the round records it")
	require.Equal(t, got, record.Settings, "every setting recorded is the one the checks used")
}

// An invocation whose settings cannot be used (a shape misread as zeros) is cancelled, visibly,
// before it claims anything: not run as a round that claims nothing and reads as done.
func TestAnInvocationWithSettingsItCannotUseIsCancelledNotDone(t *testing.T) {
	t.Parallel()
	args := argsFixture()
	args.Settings.ClaimLimit = 0
	w := &invocationWorker{p: &process{cfg: Config{Log: testLog(t)}}}
	err := w.Work(t.Context(), &river.Job[InvocationArgs]{Args: args})
	var cancel *rivertype.JobCancelError
	require.ErrorAs(t, err, &cancel)
	require.ErrorContains(t, err, "claim_limit")
}
