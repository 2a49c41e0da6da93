// Package worker runs rounds on a schedule and their invocations on any machine, on River (a job
// queue in the same PostgreSQL): a periodic job, inserted by the one elected leader among all
// workers, starts a round of the active release when its schedule says so and inserts the round's
// 1 + fan-out invocations as River jobs; every worker process runs such jobs, each one invocation
// of probe's (claim, check, sign, finish). River carries the messages; the claim and the finish
// stay probectl's, so a retried invocation is harmless: its claim finds nothing it must not take.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// River's settings that its defaults do not fit.
const (
	// Queue is the River queue of probectl's jobs.
	Queue = "probectl"
	// MaxAttempts: a failed invocation is tried again twice; a retry claims only what is free.
	MaxAttempts = 3
	// RescueStuckJobsAfter: a job still running this long after it started belongs to a dead
	// worker. Past the in-flight window its claims are closed as abandoned, so the retry River
	// then makes finds its servers due again.
	RescueStuckJobsAfter = queries.InFlightWindow + time.Minute
	// tickEvery is how often the leader asks whether a round is due; a round starts at most this
	// late after its schedule says so.
	tickEvery = time.Second
	// tickCheckTimeout bounds the read that decides whether a tick job is inserted at all: River
	// asks for it every tickEvery, and it must not block River's periodic enqueuer.
	tickCheckTimeout = 2 * time.Second
	// tickTimeout bounds a tick: a few short statements in one transaction.
	tickTimeout = 30 * time.Second
	// Grace is how long checks in flight get to end after SIGTERM; then they are cancelled and
	// stored as interrupted.
	Grace = 10 * time.Second
	// MaxMaxWorkers bounds MaxWorkers: each invocation holds a connection while it claims or
	// finishes, and runs up to its concurrency's checks.
	MaxMaxWorkers = 1000
)

// SettingMaxWorkers names Config.MaxWorkers in a *settings.Error.
const SettingMaxWorkers settings.Setting = "max_workers"

// Config is one worker process.
type Config struct {
	Pool *pgxpool.Pool
	// ArchiveDir receives the daily retention's exports (docs/retention.md); "": no automatic
	// export, and so no automatic prune.
	ArchiveDir string
	// Signer signs runs; nil stores them unsigned.
	Signer probe.Signer
	// Log receives River's and the invocations' logs.
	Log *slog.Logger
	// MaxWorkers is the most invocations this process runs at once.
	MaxWorkers int
	// AllowPrivateTargets lets this process's checks reach loopback and private addresses.
	AllowPrivateTargets bool
	// Version is this binary's version: the tick starts rounds only of a release of this version.
	Version string
	// NewChecker makes the checker of an invocation (nil: probe/check's real one).
	NewChecker func(probe.Settings) probe.Checker
	// SpoolDir, if set, is this machine's spool: replayed when the worker starts and whenever its
	// heartbeat finds results waiting, and where invocations spool what they cannot store.
	SpoolDir string

	// heartbeatEvery replaces queries.RoundHeartbeatEvery (tests; 0: it).
	heartbeatEvery time.Duration
}

// Validate checks the configuration: bad input is a *settings.Error naming the setting.
func (c *Config) Validate() error {
	if c.MaxWorkers < 1 || c.MaxWorkers > MaxMaxWorkers {
		return settings.NewError(SettingMaxWorkers, "must be 1 to %d, got %d", MaxMaxWorkers, c.MaxWorkers)
	}
	return nil
}

// tickArgs is the periodic job: is a round due?
type tickArgs struct{}

func (tickArgs) Kind() string { return "probectl_round_tick" }

// Run runs the worker until ctx ends, then shuts down: it stops fetching, gives the checks in
// flight Grace to end, cancels the rest (stored as interrupted; River queues their invocations
// again) and returns nil once River has stopped.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Signer != nil {
		if err := probe.CheckKey(ctx, cfg.Pool, cfg.Signer.KeyID()); err != nil {
			return err
		}
	}
	if cfg.SpoolDir != "" {
		// What this machine could not store before is stored before it runs anything new; a
		// spool that cannot be used stops the worker before it fetches a job.
		rec, err := probe.Recover(ctx, cfg.Pool, cfg.SpoolDir, cfg.Log)
		if err != nil {
			return err
		}
		cfg.Log.Info("spool replayed", "dir", rec.Dir, "stored", rec.Stored, "already_stored", rec.AlreadyStored,
			"left", rec.Left, "busy_files", rec.Busy)
		for _, p := range rec.Problems { // a file not replayed (another user's, a link, a bad line) says why
			cfg.Log.Warn("spool replay", "problem", p)
		}
		rec.LogSetAside(cfg.Log)
	}
	p := newProcess(cfg)
	client, err := p.client()
	if err != nil {
		return err
	}
	stopBeating := p.beat(ctx)
	defer stopBeating()
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start river: %w", err)
	}
	cfg.Log.Info("worker started", "id", p.id, "max_workers", cfg.MaxWorkers, "version", cfg.Version)
	<-ctx.Done()
	cfg.Log.Info("stopping: no more jobs fetched; checks in flight get " + Grace.String())
	err = stop(client)
	stopBeating()
	p.stopped()
	if err != nil {
		return err
	}
	return nil
}

// stop stops River: no more jobs fetched, Grace for the jobs in flight, then their contexts are
// cancelled (their checks end at once and are stored as interrupted) and River waits for them.
func stop(client *river.Client[pgx.Tx]) error {
	soft, cancel := context.WithTimeout(context.Background(), Grace)
	defer cancel()
	if err := client.Stop(soft); err == nil {
		return nil
	}
	// The cancelled checks' finishes get their whole budget: while the database blinks a finish
	// retries for up to probe.FinishTimeout and then spools; exiting sooner would drop a result
	// that was neither stored nor spooled.
	hard, cancelHard := context.WithTimeout(context.Background(), probe.FinishTimeout+5*time.Second)
	defer cancelHard()
	if err := client.StopAndCancel(hard); err != nil {
		return fmt.Errorf("stop: the jobs' ends could not be recorded within %s (%w); check that the database "+
			"answers: a result that could not be stored is in the spool, and the jobs' invocations are run again "+
			"once River rescues them", probe.FinishTimeout+5*time.Second, err)
	}
	return nil
}

// client is the River client of the worker process p (Run starts it).
func (p *process) client() (*river.Client[pgx.Tx], error) {
	cfg := p.cfg
	workers := river.NewWorkers()
	river.AddWorker(workers, &tickWorker{cfg: cfg})
	river.AddWorker(workers, &invocationWorker{p: p})
	river.AddWorker(workers, &registrySyncWorker{p: p})
	alertResend, alertQueue := alerts.River(workers, cfg.Pool, cfg.Log) // alert deliveries (internal/alerts)
	river.AddWorker(workers, &maintainWorker{cfg: cfg})
	client, err := river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{
		ID:                   p.id,
		Queues:               map[string]river.QueueConfig{Queue: {MaxWorkers: cfg.MaxWorkers}, alerts.Queue: alertQueue},
		Workers:              workers,
		MaxAttempts:          MaxAttempts,
		RescueStuckJobsAfter: RescueStuckJobsAfter,
		JobTimeout:           tickTimeout,
		Logger:               slog.New(warnings{cfg.Log.Handler()}),
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(tickEvery),
			p.tickJob, &river.PeriodicJobOpts{ID: "probectl_round_tick", RunOnStart: true}),
			river.NewPeriodicJob(river.PeriodicInterval(registrySyncEvery),
				p.registrySyncJob, &river.PeriodicJobOpts{ID: "probectl_registry_sync", RunOnStart: true}), alertResend, maintainJob()},
	})
	if err != nil {
		return nil, fmt.Errorf("configure river: %w", err)
	}
	return client, nil
}

// ClientID names this worker process among all of them (River's leader is one of these):
// host-pid, so an operator can find the process that leads.
func ClientID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// invocationWorker runs one invocation.
type invocationWorker struct {
	river.WorkerDefaults[InvocationArgs]
	p *process
}

// Timeout is the invocation's worst case (probe.Settings.JobWorstCase): past it, its jobs could
// be taken for abandoned.
func (w *invocationWorker) Timeout(j *river.Job[InvocationArgs]) time.Duration {
	return j.Args.Settings.JobWorstCase()
}

func (w *invocationWorker) Work(ctx context.Context, j *river.Job[InvocationArgs]) error {
	cfg := w.p.cfg
	s := j.Args.Settings
	s.AllowPrivateTargets = cfg.AllowPrivateTargets
	if err := s.Validate(); err != nil {
		// Args no attempt can change (a shape this worker misreads would claim nothing and read as
		// done): the job fails visibly, once, and its round's servers stay due.
		return river.JobCancel(fmt.Errorf("invocation %d of round %d: its settings cannot be used: %w",
			j.Args.Invocation, j.Args.RoundID, err))
	}
	var c probe.Checker
	if cfg.NewChecker != nil {
		c = cfg.NewChecker(s)
	} else {
		cc := probe.CheckConfig(s)
		cc.DecodeSlots = w.p.decodes // the bound is the process's, not each invocation's
		c = check.New(cc)
	}
	inv := &probe.Invocation{DB: cfg.Pool, Settings: s, Checker: c, Signer: cfg.Signer, Log: cfg.Log,
		RoundID: j.Args.RoundID, Index: j.Args.Invocation, Deadline: j.Args.StartedAt.Add(s.MaxDuration.D()),
		SpoolDir: cfg.SpoolDir}
	defer w.p.running(j.Args.RoundID)()
	p, err := inv.Run(ctx)
	cfg.Log.Info("invocation done", "round", j.Args.RoundID, "invocation", j.Args.Invocation,
		"attempt", j.Attempt, "claimed", p.Claimed, "done", p.Done, "err", err)
	return err
}

// tickWorker closes rounds whose invocations are all over and starts a round when one is due.
type tickWorker struct {
	river.WorkerDefaults[tickArgs]
	cfg Config
}

func (w *tickWorker) Work(ctx context.Context, _ *river.Job[tickArgs]) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	id, err := Tick(ctx, w.cfg.Pool, w.cfg.Version, keyID(w.cfg.Signer), w.cfg.AllowPrivateTargets, client)
	if id != 0 {
		w.cfg.Log.Info("round started", "round", id)
	}
	if err != nil {
		w.cfg.Log.Error("tick", "err", err)
	}
	return err
}

func keyID(s probe.Signer) string {
	if s == nil {
		return ""
	}
	return s.KeyID()
}

// Tick is one tick of the schedule, in one transaction serialised with every other tick: close
// the queued rounds whose invocations are all over, then start a round of the active release if
// its schedule says one is due, none of the previous round's invocations is still queued or
// running, and the release is this binary's version. It returns the round started, or 0. Then it
// emits one round.dead alert per round newly found dead. The round records allowPrivate, this
// process's --allow-private-targets, as the policy its checks run with (each worker's checks run
// with its own: a fleet's workers share the flag).
func Tick(ctx context.Context, pool queries.DB, version, keyID string, allowPrivate bool, client *river.Client[pgx.Tx]) (int64, error) {
	var started int64
	err := queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		if err := queries.LockSchedule(ctx, tx); err != nil {
			return err
		}
		done, err := queries.RoundsDone(ctx, tx)
		if err != nil {
			return err
		}
		for _, id := range done {
			if _, err := queries.FinishRound(ctx, tx, id, nil); err != nil {
				return err
			}
		}
		if due, _, err := roundDue(ctx, tx, version); err != nil || !due {
			return err
		}
		s, err := Settings(ctx, tx, version, probe.TriggerCron, allowPrivate)
		if err != nil {
			return err
		}
		started, err = Enqueue(ctx, tx, client, s, keyID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("tick: %w", err)
	}
	// Rounds are judged dead only when read: the tick is the writer that says so, once per round
	// (alerts.EmitDeadRounds is idempotent), after the schedule's transaction so that a failure
	// here never holds a round back.
	if _, err := alerts.EmitDeadRounds(ctx, pool); err != nil {
		return started, fmt.Errorf("tick: %w", err)
	}
	return started, nil
}

// roundDue says whether the active release's schedule wants a round now from a worker of version:
// it has one, it is of that version, no invocation is still queued or running (LiveInvocations),
// and the last scheduled round started at least its interval ago. other is the active release's
// schedule when it is of another version (it starts nothing here, whatever its schedule says).
func roundDue(ctx context.Context, db queries.DBTX, version string) (due bool, other *queries.Schedule, err error) {
	sched, err := queries.ActiveSchedule(ctx, db)
	if errors.Is(err, queries.ErrNoRelease) || (err == nil && sched.Every == 0) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if sched.Version != version {
		return false, &sched, nil
	}
	if live, err := queries.LiveInvocations(ctx, db); err != nil || live > 0 {
		return false, nil, err
	}
	since, err := queries.SinceScheduledRound(ctx, db)
	if err != nil || (since != nil && *since < sched.Every) {
		return false, nil, err
	}
	return true, nil, nil
}

// tickHasWork says whether a tick would do anything: close a queued round whose invocations are
// all over, start a round, or alert a round found dead. The tick decides again under its lock. other is as roundDue's.
func tickHasWork(ctx context.Context, db queries.DBTX, version string) (bool, *queries.Schedule, error) {
	due, other, err := roundDue(ctx, db, version)
	if err != nil {
		return false, nil, err
	}
	done, err := queries.RoundsDone(ctx, db)
	if err != nil || due || len(done) > 0 {
		return due || len(done) > 0, other, err
	}
	dead, err := alerts.DeadRoundsUnjudged(ctx, db)
	return dead, other, err
}

// warnings passes on River's warnings and errors only: its routine counts every few seconds
// would bury the worker's own log.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{w.Handler.WithAttrs(attrs)}
}

func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.Handler.WithGroup(name)} }
