package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/release"
)

type runRoundOptions struct {
	f *factory

	Fanout, ClaimLimit, Concurrency         int
	MinSpacing, MaxDuration, RequestTimeout time.Duration
	MaxBody                                 int64
	Finish                                  string
	AllowPrivateTargets                     bool
	SigningKey                              string
	Unsigned                                bool
	Trigger                                 string
	DryRun                                  bool
	IgnoreVersion                           bool
	SpoolDir                                string

	// changed says which flags were set on the command line: those override the active release.
	changed func(flag string) bool
}

func newRunRoundCmd(f *factory, runF func(context.Context, *runRoundOptions) error) *cobra.Command {
	opts := &runRoundOptions{f: f}
	d := probe.DefaultSettings()
	cmd := &cobra.Command{
		Use:   "round",
		Short: "Claim the due servers, check them concurrently and record a signed run for each",
		Long: `Run one round: one cron invocation plus --fanout fan-out invocations, all in this process.
Each invocation claims up to --claim-limit due servers over its life, whenever it has a free slot
(at most --concurrency checks at once), until a claim comes back empty or --max-duration is
spent; then it finishes what it holds. Several rounds may run at once, on one machine or many:
the database is the only coordinator, and no server is ever both due and without an open job.

A claim skips servers with an open job (requested within the 15-minute in-flight window) and
servers with a job within --min-spacing, unless a maintainer claimed them ('servers recheck').
A finish advances the server's next check time by its interval, stores the run and closes the
job: in one transaction (--finish tx), or in two writes, advance first (--finish advance-first).

Runs are signed (DSSE, ed25519) with --signing-key or PROBECTL_SIGNING_KEY; without a key the
round refuses to run unless --unsigned is given. A job's worst case, 8 requests at
--request-timeout plus --max-duration plus 30 s for the finish's writes, must fit the in-flight
window.

The active release ('probectl deploy record') supplies the defaults of --fanout, --claim-limit,
--concurrency, --min-spacing, --request-timeout, --max-duration and --finish; a flag given on the
command line overrides it and the summary says so. If the active release is another version
than this binary, the round refuses (exit 3) unless --ignore-version.

Progress goes to stderr when it is a terminal; the summary goes to stdout (-o json: round_id,
invocations, jobs, runs, servers, ok, failed, errors, open_jobs, stopped_claiming, interrupted,
duration_seconds and the settings). --dry-run claims nothing and explains which due servers would
be claimed, which skipped and why, and when each becomes claimable.

Exit 0 when the round ran (failed checks included), 2 for bad flags or a missing key, 3 when the
round could not run, a claim, finish or signature failed, or the round was interrupted (Ctrl-C,
SIGTERM: it claims no more, waits for the claims it sent, and stores the checks it stopped as
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
	fl.IntVar(&opts.Fanout, "fanout", d.Fanout, "fan-out invocations besides the cron one")
	fl.IntVar(&opts.ClaimLimit, "claim-limit", d.ClaimLimit, "most servers one invocation claims over its life")
	fl.IntVar(&opts.Concurrency, "concurrency", d.Concurrency, "most checks one invocation runs at once")
	fl.DurationVar(&opts.MinSpacing, "min-spacing", d.MinSpacing, "skip servers with a job within this (maintainer claims excepted)")
	fl.DurationVar(&opts.MaxDuration, "max-duration", d.MaxDuration, "the round's time budget: no claim after it")
	fl.DurationVar(&opts.RequestTimeout, "request-timeout", d.RequestTimeout, "timeout of each request of a check")
	fl.Int64Var(&opts.MaxBody, "max-body", d.MaxBodyBytes, "most bytes read of each response body")
	fl.StringVar(&opts.Finish, "finish", d.Finish, "finish mode: tx or advance-first")
	fl.BoolVar(&opts.AllowPrivateTargets, "allow-private-targets", false, "let checks reach loopback, private and link-local addresses")
	fl.StringVar(&opts.SigningKey, "signing-key", "", "ed25519 private key file that signs runs (else PROBECTL_SIGNING_KEY)")
	fl.BoolVar(&opts.Unsigned, "unsigned", false, "store runs without an envelope when there is no key")
	fl.StringVar(&opts.Trigger, "trigger", d.Trigger, "what started the round: manual or cron")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "claim nothing; explain what would be claimed and skipped")
	fl.StringVar(&opts.SpoolDir, "spool-dir", "", "where results that could not be stored wait (default $XDG_STATE_HOME/probectl)")
	fl.BoolVar(&opts.IgnoreVersion, "ignore-version", false, "run even though the active release is another version")
	return cmd
}

// settings are the round's settings from the flags.
func (o *runRoundOptions) settings(version string) probe.Settings {
	return probe.Settings{
		Fanout: o.Fanout, ClaimLimit: o.ClaimLimit, Concurrency: o.Concurrency,
		MinSpacing: o.MinSpacing, MaxDuration: o.MaxDuration, RequestTimeout: o.RequestTimeout,
		MaxBodyBytes: o.MaxBody, Finish: o.Finish, AllowPrivateTargets: o.AllowPrivateTargets,
		Trigger: o.Trigger, Version: version,
	}
}

// roundRequest asks the active release for the round's settings (see release.SettingsForRound).
func (o *runRoundOptions) roundRequest(flags probe.Settings) release.RoundRequest {
	return release.RoundRequest{BinaryVersion: o.f.Build.Version, IgnoreVersion: o.IgnoreVersion,
		Flags: flags, Changed: o.changed}
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
	settings := opts.settings(f.Build.Version)
	if err := settings.Validate(); err != nil {
		return err
	}
	if opts.DryRun {
		return runRoundDryRun(ctx, opts, settings, format)
	}
	signer, err := opts.signer()
	if err != nil {
		return err
	}
	dir, err := spoolDir(f, opts.SpoolDir)
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	settings, overrides, err := release.SettingsForRound(ctx, pool, opts.roundRequest(settings))
	if err != nil {
		return err
	}
	round := &probe.Round{
		DB:       pool,
		Settings: settings,
		Checker:  check.New(settings.CheckConfig()),
		Signer:   signer,
		Log:      slog.New(slog.NewTextHandler(f.IO.ErrOut, nil)),
		SpoolDir: dir,
	}
	if f.IO.ErrTTY {
		round.Progress = (&progressPrinter{w: f.IO.ErrOut}).report
	}
	sum, err := round.Run(ctx)
	if sum == nil {
		return err
	}
	if rerr := renderRoundSummary(f, format, sum, overrides); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

func runRoundDryRun(ctx context.Context, opts *runRoundOptions, settings probe.Settings, format string) error {
	f := opts.f
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	if settings, _, err = release.SettingsForRound(ctx, pool, opts.roundRequest(settings)); err != nil {
		return err
	}
	// As of the database's clock, which the claim judges by, unless a test fixed the time.
	var now *time.Time
	if f.Clock != nil {
		at := f.Clock()
		now = &at
	}
	plan, err := probe.Preview(ctx, pool, settings, now)
	if err != nil {
		return err
	}
	return renderPlan(f, format, plan)
}
