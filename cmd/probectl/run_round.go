package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/memlimit"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

type runRoundOptions struct {
	f *factory

	// Settings hold the flags of the field table's rows (settings.Fields).
	Settings       settings.Settings
	SigningKey     string
	Unsigned       bool
	Trigger        string
	DryRun         bool
	IgnoreVersion  bool
	ViaQueue, Wait bool
	Quiet          bool
	SpoolDir       string

	// changed says which flags were set on the command line: those override the active release.
	changed func(flag string) bool
}

func newRunRoundCmd(f *factory, runF func(context.Context, *runRoundOptions) error) *cobra.Command {
	opts := &runRoundOptions{f: f, Settings: settings.Default()}
	cmd := &cobra.Command{
		Use:   "round",
		Short: "Claim the due servers, check them concurrently and record a signed run for each",
		Long: `Run one round: one cron invocation plus --fanout fan-out invocations, all in this process.
Each invocation claims up to --claim-limit due servers over its life, for its free slots together
(at most --concurrency checks at once; it claims again once half its slots are free or shortly
after its last claim), until a claim comes back empty or --max-duration is spent; then it
finishes what it holds. Several rounds may run at once, on one machine or many:
the database is the only coordinator, and no server is ever both due and without an open job.

A claim locks the due server rows it takes, skipping rows another claim holds, and leases each:
the server's next check time moves to its job's lease end (15 minutes on), so it is not due while
in flight and is due again if the prober dies. It skips servers with an open job and servers with
a job within --min-spacing, unless a maintainer claimed them ('servers recheck').
A finish advances the server's next check time by its interval, stores the run and closes the
job: in one transaction (--finish tx), or in two writes, advance first (--finish advance-first).

Every request names probectl, its version and --contact in its User-Agent
("probectl/v1.2.0 (+https://probe.example/about)"): set it to a page or address where the
operators of the probed servers can reach you (better: record it on the release, 'deploy record
--contact', so that rounds the workers start name it too). A server that answers 429 or 503 with Retry-After
is recorded as failed, rate_limited, and is next checked a full interval later.

Runs are signed (DSSE, ed25519) with --signing-key or PROBECTL_SIGNING_KEY; without a key the
round refuses to run unless --unsigned is given. A round --via-queue reads no key: the workers
that run it sign its runs, each with its own, and --signing-key is refused. A job's worst case, 8 requests at
--request-timeout plus --max-duration plus 30 s for the finish's writes, must fit the in-flight
window.

Bounds (out of bounds exits 2 naming the flag): --request-timeout 1s to 1m, --max-duration 1s
to 14m, --min-spacing 10m to 7d (no server is checked twice within 10 minutes), --fanout at
most 1000, --claim-limit and --concurrency at most 10000. An active release that ships a setting
out of bounds is refused (exit 2, naming the release) unless a flag overrides it.

Each job is a lease: the prober's own copy ends 30 s before the in-flight window on either clock,
and no request is sent after it; such a check is stored as fenced, "fault": "probectl".

The active release ('probectl deploy record') supplies the defaults of --fanout, --claim-limit,
--concurrency, --min-spacing, --request-timeout, --max-duration, --finish and --contact; a flag given on the
command line overrides it and the summary says so. If the active release is another version
than this binary, the round refuses (exit 3) unless --ignore-version.

A progress display (jobs claimed, in flight and done, elapsed, time left) goes to stderr when it
is a terminal, unless --quiet; the summary goes to stdout (-o json: round_id,
invocations, jobs, runs, servers, ok, failed, errors, open_jobs, stopped_claiming, interrupted,
duration_seconds and the settings). --dry-run claims nothing and explains which due servers would
be claimed, which skipped and why, and when each becomes claimable.

Exit 0 when the round ran (failed checks included), 2 for bad flags or a missing key, 3 when the
round could not run, a claim, finish or signature failed, or the round was interrupted (Ctrl-C,
SIGTERM or SIGHUP: it claims no more, waits for the claims it sent, and stores the checks it stopped as
interrupted by probectl).

Nothing checked is lost when the database blinks: a finish tries again, on a fresh connection,
inside its 30-second budget, and a result that still cannot be stored is written to a spool file
of this process and round under --spool-dir ($XDG_STATE_HOME/probectl, else
~/.local/state/probectl; 0600 files in a 0700 directory). Before it claims, a round stores what
waits there, each result exactly once ('probectl runs recover' does only that).`,
		Example: `  probectl run round --signing-key probe.key
  PROBECTL_SIGNING_KEY=probe.key probectl run round --trigger cron -o json
  probectl run round --dry-run
  probectl run round --unsigned --fanout 0 --claim-limit 1 --allow-private-targets`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.changed = cmd.Flags().Changed
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRunRound(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addSettingFlags(fl, &opts.Settings, func(settings.Field) bool { return true })
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "no progress display on the terminal (the summary is still printed)")
	fl.StringVar(&opts.SigningKey, "signing-key", "", "ed25519 private key file that signs runs (else PROBECTL_SIGNING_KEY)")
	fl.BoolVar(&opts.Unsigned, "unsigned", false, "store runs without an envelope when there is no key")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "claim nothing; explain what would be claimed and skipped")
	fl.StringVar(&opts.SpoolDir, "spool-dir", "", "where results that could not be stored wait (default $XDG_STATE_HOME/probectl)")
	fl.BoolVar(&opts.IgnoreVersion, "ignore-version", false, "run even though the active release is another version")
	fl.BoolVar(&opts.ViaQueue, "via-queue", false, "queue the invocations for 'probectl worker' processes, print the round id and exit")
	fl.BoolVar(&opts.Wait, "wait", false, "with --via-queue: wait for the workers and print the round's summary")
	return cmd
}

// flags are the round's settings as its flags give them, for this binary's version.
func (o *runRoundOptions) flags() settings.Settings {
	s := o.Settings
	s.Version = o.f.Build.Version
	return s
}

// resolve asks the active release for the round's settings (see release.SettingsForRound), within
// the field table's bounds, and says what is wrong with them in the flags' words.
func (o *runRoundOptions) resolve(ctx context.Context, db queries.DBTX) (settings.Settings, []release.Override, error) {
	s, overrides, err := release.SettingsForRound(ctx, db, release.RoundRequest{BinaryVersion: o.f.Build.Version,
		IgnoreVersion: o.IgnoreVersion, Flags: o.flags(), Changed: changedSetting(o.changed), Bounds: true})
	if err != nil {
		return s, nil, ignoreVersionHint(err)
	}
	return s, overrides, nil
}

// signer loads the signing key, or returns nil with --unsigned. It never connects.
func (o *runRoundOptions) signer() (probe.Signer, error) {
	path, from := o.SigningKey, "--signing-key"
	if path == "" {
		path, from = o.f.Getenv("PROBECTL_SIGNING_KEY"), "PROBECTL_SIGNING_KEY"
	}
	if o.Unsigned {
		if o.SigningKey != "" {
			return nil, exit.UsageError(errors.New("--unsigned and --signing-key: choose one"))
		}
		return nil, nil
	}
	if path == "" {
		return nil, exit.UsageError(errors.New("no signing key: pass --signing-key FILE or set PROBECTL_SIGNING_KEY " +
			"('probectl keys generate --out FILE' makes one), or --unsigned to store runs without envelopes"))
	}
	s, err := attest.LoadSigner(path)
	if err != nil {
		return nil, exit.UsageError(fmt.Errorf("%s: %w", from, err))
	}
	return s, nil
}

func runRunRound(ctx context.Context, opts *runRoundOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	// The flags alone, before anything connects: bad input exits 2 without a database.
	if _, _, err := settings.Resolve(settings.Request{Flags: opts.flags(), Bounds: true}); err != nil {
		return err
	}
	memlimit.Set() // checks run in this process: its memory is bounded as a worker's is
	if err := opts.checkQueueFlags(); err != nil {
		return err
	}
	if opts.DryRun {
		return runRoundDryRun(ctx, opts, format)
	}
	if opts.ViaQueue {
		// The workers sign: no key is asked for or read here.
		pool, err := f.RoundPool(ctx)
		if err != nil {
			return err
		}
		s, overrides, err := opts.resolve(ctx, pool)
		if err != nil {
			return err
		}
		return runRoundViaQueue(ctx, opts, pool, s, overrides, format)
	}
	signer, err := opts.signer()
	if err != nil {
		return err
	}
	dir, err := spoolDir(f, opts.SpoolDir)
	if err != nil {
		return err
	}
	pool, err := f.RoundPool(ctx)
	if err != nil {
		return err
	}
	s, overrides, err := opts.resolve(ctx, pool)
	if err != nil {
		return err
	}
	round := &probe.Round{
		DB:       pool,
		Settings: s,
		Checker:  check.New(probe.CheckConfig(s)),
		Signer:   signer,
		Log:      slog.New(slog.NewTextHandler(f.IO.ErrOut, nil)),
		SpoolDir: dir,
	}
	var progress *roundProgress
	if f.IO.ErrTTY && !opts.Quiet {
		progress = newRoundProgress(f.IO.Progress(), s.Invocations(), s.ClaimLimit)
		round.Progress = progress.report
	}
	sum, err := round.Run(ctx)
	if progress != nil {
		progress.finish()
	}
	if sum == nil {
		return spoolFlagError(err, opts.SpoolDir)
	}
	deliverRoundAlerts(ctx, pool, sum.RoundID, round.Log) // alerts (cmd/probectl/alerts_round.go)
	if rerr := renderRoundWithFailures(ctx, f, pool, format, sum, overrides, round.Log); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// renderRoundWithFailures renders a round's summary with its failures, read back from the stored
// runs after the round (even a stopped one): a failure to read them is logged, not fatal.
func renderRoundWithFailures(ctx context.Context, f *factory, pool *pgxpool.Pool, format string,
	sum *probe.Summary, overrides []release.Override, log *slog.Logger) error {
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	failures, ferr := history.RoundFailures(fctx, pool, sum.RoundID, sum.Jobs)
	degraded, derr := alerts.RoundDegraded(fctx, pool, sum.RoundID)
	fcancel()
	if ferr != nil && log != nil {
		log.Error("could not read the round's failures back", "round", sum.RoundID, "err", ferr)
	}
	if derr != nil && log != nil {
		log.Error("could not read whether the round was degraded", "round", sum.RoundID, "err", derr)
	}
	return renderRoundSummary(f, format, sum, overrides, failures, degraded)
}

func runRoundDryRun(ctx context.Context, opts *runRoundOptions, format string) error {
	f := opts.f
	pool, err := f.RoundPool(ctx)
	if err != nil {
		return err
	}
	s, _, err := opts.resolve(ctx, pool)
	if err != nil {
		return err
	}
	// As of the database's clock, which the claim judges by, unless a test fixed the time.
	plan, err := probe.PreviewGuarded(ctx, pool, s, f.readAt(), check.New(probe.CheckConfig(s)))
	if err != nil {
		return err
	}
	return renderPlan(f, format, plan)
}
