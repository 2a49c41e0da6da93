package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/memlimit"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/probe/worker"
)

type workerOptions struct {
	f *factory

	SigningKey string
	Unsigned   bool
	// Settings hold the flags the worker shares with run round (the field table's
	// allow_private_targets): what the rounds it starts record, and what its checks use.
	Settings   settings.Settings
	SpoolDir   string
	MaxWorkers int
	ArchiveDir string
}

func newWorkerCmd(f *factory) *cobra.Command {
	opts := &workerOptions{f: f}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run scheduled rounds and queued invocations, on as many machines as you like",
		Long: `Run a worker: a long-lived process that runs the invocations of rounds, as River jobs in the
same PostgreSQL ('probectl migrate' creates River's tables). Start one or more on any machines.

One worker among all of them is elected leader; every second it reads whether a round is due (and
queues a job for it only then, so an idle leader writes nothing): the active release's schedule ('probectl deploy record --every 5m') says how often, and no round
starts while an invocation of the previous one is still queued or running. A due round is
recorded and its 1 + fan-out invocations queued in one transaction; any worker runs them (claim,
check, sign, finish, exactly as 'run round' does), at most --max-workers at once per process.
The round's settings come from the active release; a release of another version starts nothing.

An invocation's job times out after its worst case (8 requests at the request timeout, the
round's budget and the finish's), is tried at most 3 times, and a job whose worker died is
rescued after the in-flight window plus a minute; its claims stay open until the window ends, so
no other worker checks those servers meanwhile.

The leader also runs the registry syncs scheduled with 'probectl servers sync --registry URL
--every 1h': every minute it asks whether one is due, and a job syncs it (one registry a job, one
job a registry at a time); --allow-private-targets lets such a sync reach a registry on a
private network too. See docs/registry.md.

It also delivers the alerts (docs/alerts.md): every event a finish writes to the outbox comes with
one River job per matching receiver (queue probectl_alerts, up to 10 at once per process, apart
from the invocations so a long round never holds an alert back), tried again with exponential
backoff (the first retry within 10 s) until the receiver answers 2xx or 24 h have passed, each
attempt recorded ('probectl alerts list'). The leader re-sends the open down alerts to each
Alertmanager receiver every minute (the policy's re-send period) so they stay firing, and emits
one round.dead alert for each round found dead. Receivers are managed with 'probectl receivers'.

Results an invocation checked but could not store (the database down longer than the finish's
30-second budget) go to this machine's spool (--spool-dir); the worker stores what waits there
when it starts and whenever its heartbeat finds results waiting. Every 10 seconds it writes its
heartbeat (alive, invocations running, spool depth, version, host), which 'probectl status'
shows on any machine, and keeps the rounds it runs alive.

On SIGTERM, SIGHUP or Ctrl-C the worker stops fetching jobs, gives the checks in flight 10 seconds, then
cancels the rest (stored as interrupted, at probectl's fault; River queues their invocations
again, not counted as an attempt) and exits 0; 3 when River could not record its jobs' ends within
35 seconds, the database away (a result not stored is spooled; docs/deploy.md).`,
		Example: `  probectl deploy record --fanout 19 --claim-limit 5 --concurrency 3 --every 5m
  probectl worker --signing-key /etc/probectl/probe.key --max-workers 20
  PROBECTL_SIGNING_KEY=probe.key probectl worker --spool-dir /var/lib/probectl/spool`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd.Context(), opts) },
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.SigningKey, "signing-key", "", "ed25519 private key file that signs runs (else PROBECTL_SIGNING_KEY)")
	fl.BoolVar(&opts.Unsigned, "unsigned", false, "store runs without an envelope when there is no key")
	addSettingFlags(fl, &opts.Settings, func(f settings.Field) bool { return f.Name == settings.AllowPrivateTargets })
	fl.StringVar(&opts.SpoolDir, "spool-dir", "", "where results that could not be stored wait, replayed at start (default $XDG_STATE_HOME/probectl)")
	fl.IntVar(&opts.MaxWorkers, "max-workers", 10, "most invocations this process runs at once (1 to 1000)")
	fl.StringVar(&opts.ArchiveDir, "archive-dir", "", "where the daily retention writes its exports before pruning ('runs retention'; default: no automatic prune)")
	return cmd
}

func runWorker(ctx context.Context, opts *workerOptions) error {
	f := opts.f
	if opts.ArchiveDir != "" {
		if err := retention.CheckArchiveDir(opts.ArchiveDir); err != nil {
			return exit.UsageError(fmt.Errorf("--archive-dir: %w", err))
		}
	}
	cfg := worker.Config{MaxWorkers: opts.MaxWorkers, AllowPrivateTargets: opts.Settings.AllowPrivateTargets, ArchiveDir: opts.ArchiveDir,
		Version: f.Build.Version, Log: slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if limit, from := memlimit.Set(); from != "" {
		cfg.Log.Info("soft memory limit set", "bytes", limit, "from", from)
	}
	signer, err := (&runRoundOptions{f: f, SigningKey: opts.SigningKey, Unsigned: opts.Unsigned}).signer()
	if err != nil {
		return err
	}
	cfg.Signer = signer
	if cfg.SpoolDir, err = spoolDir(f, opts.SpoolDir); err != nil {
		return err
	}
	if cfg.Pool, err = f.Pool(ctx); err != nil {
		return err
	}
	return spoolFlagError(worker.Run(ctx, cfg), opts.SpoolDir)
}
