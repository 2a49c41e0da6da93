package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/pglaunch"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// DefaultServers is the size of the simulated fleet: several rounds of 20 invocations × 5.
const DefaultServers = 300

// RequestTimeout is the demo releases' per-request timeout: short, so that a server that never
// answers costs a round two seconds rather than ten.
const RequestTimeout = 2 * time.Second

// Options choose the scenario and where it reports.
type Options struct {
	// ReproduceIncident replays the incident instead of the default scenario.
	ReproduceIncident bool
	// Keep leaves PostgreSQL running when the demo ends (Result.Kept says where).
	Keep bool
	// Version is the probectl version: the releases are recorded with it, so that the rounds,
	// which run as this version, accept them.
	Version string
	// Actor is who records the releases and the rollback.
	Actor string
	// Servers is the fleet's size (default DefaultServers).
	Servers int
	// Report receives each step and what it showed. Required.
	Report Reporter
	// Log receives the rounds' errors, as `run round` logs them; nil discards. Warnings are left
	// out: each round's summary counts them (the replay's next check times not advanced).
	Log io.Writer
	// BinDir is where PostgreSQL's server binaries are, when pglaunch cannot find them.
	BinDir string
}

// Reporter is told what the demo does, in order, from one goroutine.
type Reporter interface {
	// Step starts step n of total.
	Step(n, total int, title string)
	// Say adds a line to the narration of the current step.
	Say(format string, args ...any)
	// Round is a round that ran, as `run round` shows it.
	Round(sum *probe.Summary)
	// Verify is a `deploy verify` report.
	Verify(rep *release.Report)
	// Duplicates is an `audit duplicates` report.
	Duplicates(rep *audit.DuplicatesReport)
	// RollbackPlanned is what a rollback changes: a dry run, or the plan shown before applying it.
	RollbackPlanned(plan *release.RollbackPlan, dryRun bool)
	// RolledBack is a rollback that was applied.
	RolledBack(plan *release.RollbackPlan)
}

// Scenarios.
const (
	ScenarioDemo     = "demo"
	ScenarioIncident = "reproduce-incident"
)

// Result is everything the demo did.
type Result struct {
	Scenario string
	Fleet    FleetCounts
	Servers  int
	Rounds   []*probe.Summary
	// Verify is the deploy verify of the fan-out release: pass by default, fail in the replay.
	Verify *release.Report
	// VerifyAfterRollback is the deploy verify of the rounds after the replay's rollback.
	VerifyAfterRollback *release.Report
	Duplicates          *audit.DuplicatesReport
	// Rollback is the fanout-off rollback: planned (dry run) by default, applied in the replay.
	Rollback *release.RollbackPlan
	// Kept says where the database is when Options.Keep left it running.
	Kept     *Kept
	Duration time.Duration
}

// Jobs is how many jobs the rounds claimed.
func (r *Result) Jobs() int {
	n := 0
	for _, s := range r.Rounds {
		n += s.Jobs
	}
	return n
}

// Conclusion says in one sentence what the demo showed.
func (r *Result) Conclusion() string {
	if r.Duplicates == nil || r.Verify == nil {
		return "the demo stopped before it could read back its rounds"
	}
	if r.Scenario == ScenarioIncident && len(r.Duplicates.Periods) == 3 {
		p := r.Duplicates.Periods
		return fmt.Sprintf("%d duplicate claim(s) while fan-out was live with the old order, %d before it, %d after the rollback; "+
			"deploy verify said %s, and %s after the rollback", p[1].Unexplained, p[0].Unexplained, p[2].Unexplained,
			r.Verify.Verdict, verdictOf(r.VerifyAfterRollback))
	}
	return fmt.Sprintf("%d rounds, %d jobs for %d servers, %d duplicate claim(s); deploy verify said %s",
		len(r.Rounds), r.Jobs(), r.Servers, r.Duplicates.Unexplained(), r.Verify.Verdict)
}

func verdictOf(rep *release.Report) string {
	if rep == nil {
		return "nothing"
	}
	return rep.Verdict
}

// Kept is a database left running: how to connect and how to stop it.
type Kept struct {
	URL string
	PID int
	Dir string
}

// UnexpectedError says the scenario did not come out as it must (the default scenario found a
// problem, or the replay found no duplicate claim): exit 1, like a check that failed.
type UnexpectedError struct{ Problems []string }

func (e *UnexpectedError) Error() string {
	return fmt.Sprintf("the demo did not come out as it should: %s", strings.Join(e.Problems, "; "))
}

// ExitCode: a check found a problem.
func (e *UnexpectedError) ExitCode() int { return exit.Found }

// env is what the steps share.
type env struct {
	opts    Options
	rep     Reporter
	cluster *pglaunch.Cluster
	pool    *pgxpool.Pool
	fleet   *Fleet
	signer  *attest.Signer
	log     *slog.Logger
	res     *Result
}

// Run runs the demo and removes everything it started (unless Options.Keep). The result is
// returned whenever the demo got as far as a round, also with an error.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	if opts.Report == nil {
		return nil, errors.New("demo: a reporter is required")
	}
	if opts.Servers == 0 {
		opts.Servers = DefaultServers
	}
	if opts.Actor == "" {
		opts.Actor = "demo"
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	start := time.Now()
	e := &env{opts: opts, rep: opts.Report, log: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelError})),
		res: &Result{Scenario: ScenarioDemo, Servers: opts.Servers}}
	if opts.ReproduceIncident {
		e.res.Scenario = ScenarioIncident
		if opts.Servers < minIncidentServers {
			return nil, exit.UsageError(fmt.Errorf("the incident replay needs at least %d servers, got %d", minIncidentServers, opts.Servers))
		}
	}
	defer func() {
		err = errors.Join(err, e.close())
		e.res.Duration = time.Since(start)
		if len(e.res.Rounds) > 0 || err == nil {
			res = e.res
		}
	}()
	if opts.ReproduceIncident {
		return nil, e.incident(ctx)
	}
	return nil, e.demo(ctx)
}

// close stops the fleet and, unless kept, PostgreSQL (which removes its directory).
func (e *env) close() error {
	var errs []error
	if e.pool != nil {
		e.pool.Close()
	}
	if e.fleet != nil {
		errs = append(errs, e.fleet.Close())
	}
	if e.cluster != nil {
		if e.opts.Keep {
			e.res.Kept = &Kept{URL: e.cluster.URL("postgres"), PID: e.cluster.PID(), Dir: e.cluster.Dir()}
		} else if err := e.cluster.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop the demo's PostgreSQL: %w", err))
		}
	}
	return errors.Join(errs...)
}

// startDatabase is the first two steps: a throwaway PostgreSQL, migrated as `probectl migrate`
// does it.
func (e *env) startDatabase(ctx context.Context, total int) error {
	e.rep.Step(1, total, "starting a throwaway PostgreSQL")
	c, err := pglaunch.Start(ctx, pglaunch.Options{BinDir: e.opts.BinDir, Detach: e.opts.Keep})
	if errors.Is(err, pglaunch.ErrNoBinaries) {
		return exit.UnavailableError(fmt.Errorf("probectl demo needs PostgreSQL's server binaries (initdb and postgres) "+
			"and found none: %w (Debian and Ubuntu: apt-get install postgresql; Fedora: dnf install postgresql-server; "+
			"macOS: brew install postgresql)", err))
	}
	if err != nil {
		return exit.UnavailableError(fmt.Errorf("start a throwaway PostgreSQL: %w", err))
	}
	e.cluster = c
	e.rep.Say("listening on 127.0.0.1:%d, data in %s", c.Port(), c.Dir())

	e.rep.Step(2, total, "applying the schema")
	e.rep.Say("$ probectl migrate")
	// One connection per invocation of a round, as a fleet of workers would have.
	e.pool, err = queries.Connect(ctx, c.URL("postgres"), "demo", queries.ConnectOptions{MaxConns: 64})
	if err != nil {
		return err
	}
	applied, err := queries.Migrate(ctx, e.pool)
	if err != nil {
		return err
	}
	e.rep.Say("%d migrations applied", len(applied))
	return nil
}

// startFleet starts the simulated fleet and imports it, as `probectl servers import` does.
func (e *env) startFleet(ctx context.Context, n, total int) error {
	e.rep.Step(n, total, fmt.Sprintf("starting a simulated fleet of %d servers on 127.0.0.1", e.opts.Servers))
	f, err := StartFleet(e.opts.Servers)
	if err != nil {
		return err
	}
	e.fleet = f
	e.res.Fleet = f.Counts()
	e.rep.Say("%s", e.res.Fleet)
	e.rep.Say("$ probectl servers import fleet.csv   # every server due now, checked every 12h")
	rows, err := f.Rows()
	if err != nil {
		return err
	}
	imported, err := directory.Import(ctx, e.pool, rows, nil, false)
	if err != nil {
		return err
	}
	e.rep.Say("%d servers imported, listening on %s", imported.Inserted, f.Addr)
	return nil
}

// newKey generates a throwaway signing key and registers it, as `probectl keys generate` does.
func (e *env) newKey(ctx context.Context) error {
	pub, priv, err := attest.GenerateKey()
	if err != nil {
		return fmt.Errorf("generate a signing key: %w", err)
	}
	e.signer = attest.NewSigner(priv)
	if err := queries.RegisterSigningKey(ctx, e.pool, e.signer.KeyID(), pub); err != nil {
		return err
	}
	e.rep.Say("$ probectl keys generate --out demo.key   # key %s, registered; it never leaves memory", e.signer.KeyID())
	return nil
}

// record records a release as `probectl deploy record` does, and says the command. A release
// that command refuses (the incident's, with no spacing guard) is said as what it is, not as a
// command that would fail when copied: the replay records it directly, on its own database.
func (e *env) record(ctx context.Context, s release.Settings, ways []release.Way, note string) (*release.Recorded, error) {
	req := release.RecordRequest{Version: e.opts.Version, Settings: s, WaysBack: ways, Note: note, Actor: e.opts.Actor}
	if err := release.ValidateRecord(req); err != nil {
		e.rep.Say("the release of that time, recorded directly: deploy record refuses it since the fix (%v)", err)
		e.rep.Say("its settings: fan-out %d, claim limit %d, concurrency %d, min spacing %s, finish %s, request timeout %s",
			s.Fanout, s.ClaimLimit, s.Concurrency, s.MinSpacing, s.Finish, s.RequestTimeout)
	} else {
		cmd := fmt.Sprintf("$ probectl deploy record --fanout %d --claim-limit %d --concurrency %d --min-spacing %s --finish %s --request-timeout %s",
			s.Fanout, s.ClaimLimit, s.Concurrency, s.MinSpacing, s.Finish, s.RequestTimeout)
		if len(ways) > 0 {
			cmd += " --ways-back " + joinWays(ways)
		}
		e.rep.Say("%s", cmd)
	}
	rec, err := release.Record(ctx, e.pool, req)
	if err != nil {
		return nil, err
	}
	e.rep.Say("release #%d (%s) is active since %s: %s", rec.Release.ID, rec.Release.Version,
		rec.Event.At.UTC().Format(time.RFC3339Nano), note)
	return rec, nil
}

// joinWays writes ways as --ways-back takes them: "previous,fanout-off".
func joinWays(ways []release.Way) string {
	names := make([]string, 0, len(ways))
	for _, w := range ways {
		names = append(names, string(w))
	}
	return strings.Join(names, ",")
}
