// Package status reads what an operator on call wants to see at a glance: the active release, the
// servers that are due, the jobs still open (and the stale ones a dead probe left behind), the
// last rounds, and the duplicate claims of the last 24 hours. `probectl status` prints it and
// `probectl serve` shows it as a page, as JSON and as Prometheus metrics.
//
// Read takes everything from one READ ONLY, REPEATABLE READ transaction: the figures come from
// one snapshot and agree with each other, and the read is safe on a hot standby and under a role
// that may only SELECT.
package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

const (
	// InFlight is the window after which an open job is stale: the claim would close it as
	// abandoned, so its probe is presumed dead.
	InFlight = queries.InFlightWindow
	// RecentRounds is how many rounds the report lists.
	RecentRounds = 10
	// MaxOpenJobs bounds the open jobs listed (the counts are always complete).
	MaxOpenJobs = 200
	// DuplicatesPeriod is how far back the duplicate count looks.
	DuplicatesPeriod = 24 * time.Hour
)

// Report is the state of the prober at one moment. It marshals to the documented JSON shape
// (docs/status.md).
type Report struct {
	// GeneratedAt is the moment every figure refers to.
	GeneratedAt time.Time
	// ActiveRelease is nil when no release was ever recorded (or none is active).
	ActiveRelease *Release
	Due           Due
	// OpenJobs are the oldest open jobs, at most MaxOpenJobs; OpenCount and StaleCount count all.
	OpenJobs   []OpenJob
	OpenCount  int
	StaleCount int
	// RecentRounds are the last RecentRounds rounds, newest first; RoundsTotal counts every round.
	RecentRounds []Round
	RoundsTotal  int64
	Duplicates   Duplicates
	// Workers are the `probectl worker` processes heard from in the last WorkersWindow, alive ones
	// first; Queue is their invocations in River's queue, nil when the database has no River
	// tables.
	Workers []Worker
	Queue   *Queue
	// Alerts are the open alerts (server.down not yet recovered), newest first, at most
	// MaxOpenAlerts; AlertsTotal counts them all.
	Alerts      []OpenAlert
	AlertsTotal int
	// Spool is what waits in this machine's spool (results a round could not store); nil when
	// nothing waits, or it was not looked at (serve: the page is about the database).
	Spool *Spool
	// Standby is set when the report was read on a hot standby (--read-database-url): its figures
	// are as of GeneratedAt, the standby's replay lag before its clock.
	Standby *Standby
}

// Standby is the hot standby a report was read on.
type Standby struct {
	ReplayLag time.Duration
}

// Spool is what waits in a spool directory to be stored (probe.Recover).
type Spool struct {
	Dir            string
	Files, Results int
	// SetAside counts the spool files and failover journals set aside for a person to read
	// (what no replay can store).
	SetAside int
}

// ReadSpool counts what waits in the spool directory dir, to show with a report: nil when nothing
// waits and no file is set aside (a missing directory included).
func ReadSpool(dir string) (*Spool, error) {
	c, err := probe.InspectSpool(dir)
	if err != nil || c.Files+c.SetAside == 0 {
		return nil, err
	}
	return &Spool{Dir: c.Dir, Files: c.Files, Results: c.Results, SetAside: c.SetAside}, nil
}

// Release is the active release's round settings.
type Release struct {
	ID         int64
	Version    string
	Kind       string // deploy | fanout-off
	DeployedAt time.Time
	DeployedBy string
	// Carried are the round settings it ships.
	settings.Carried
	// Every is how often `probectl worker` starts its rounds; 0: no schedule, rounds by hand.
	Every time.Duration
}

// Due is how many active servers are due.
type Due struct {
	Count int
	// Held are due servers with an open job: a round is on them, they will not be claimed twice.
	Held int
	// Oldest has waited longest; nil when nothing is due.
	Oldest *DueServer
}

// DueServer is a server waiting for its check.
type DueServer struct {
	queries.DueServer
	// Overdue is how long it has been due.
	Overdue time.Duration
}

// OpenJob is a claim whose probe has not finished it, aged at the report's moment: the type
// `probectl audit open` shows too, with its one staleness rule (audit.IsStale). Leased says the
// server's next check is the job's lease end, where the claim put it: the job is in flight, as
// every job of a healthy round is. Advanced says the server's next check moved past the request to
// anything else, so the probe made its first write (advance) and not its second (finish): a probe
// that died between its writes leaves exactly this, no duplicate can follow, the job just stays
// open (queries/open_jobs.sql holds the rule).
type OpenJob = audit.OpenJob

// Round is a recent round and what it left: its FinishedAt is nil while it runs (or if it died);
// its HeartbeatAt is its last sign of life (nil for a round of a binary from before heartbeats);
// its State is running, finished, dead (queries.RoundDeadAfter) or recovered: a dead round's
// process is gone, and its open jobs wait for the in-flight window; a recovered one claimed jobs
// and every one of them has its run (the alerts' rule, alert_round_recovered). Lost counts a
// round's jobs abandoned without a run: a dead round with any is never recovered.
type Round struct {
	queries.RecentRound
	// Degraded is set when the storm guard judged the round degraded (its failures counted toward
	// no server's down threshold; docs/alerts.md).
	Degraded *queries.DegradedRound
}

// Duration is how long the round took; nil while it runs (or if it died).
func (r Round) Duration() *time.Duration {
	if r.FinishedAt == nil {
		return nil
	}
	d := r.FinishedAt.Sub(r.StartedAt)
	return &d
}

// Duplicates summarises the duplicate-claim audit over the last DuplicatesPeriod.
type Duplicates struct {
	Since, Until time.Time
	Window       time.Duration
	// Report is the audit's full answer (pairs ordered by the second request).
	Report *audit.DuplicatesReport
}

// Pairs is the number of duplicate pairs found.
func (d Duplicates) Pairs() int {
	if d.Report == nil {
		return 0
	}
	return len(d.Report.Pairs)
}

// Unexplained is the number of pairs that are not explicit re-checks.
func (d Duplicates) Unexplained() int {
	if d.Report == nil {
		return 0
	}
	return d.Report.Unexplained()
}

// Read reads the report as of now, in one READ ONLY transaction on db. A nil now means the
// database's clock (the transaction's now()), which is what a live page wants; tests pass a fixed
// time.
func Read(ctx context.Context, db queries.DB, now *time.Time) (*Report, error) {
	var r *Report
	err := queries.InReadOnlyTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		r, err = read(ctx, tx, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read status: %w", err)
	}
	return r, nil
}

func read(ctx context.Context, tx pgx.Tx, at *time.Time) (*Report, error) {
	now, err := queries.StatusNow(ctx, tx, at)
	if err != nil {
		return nil, err
	}
	r := &Report{GeneratedAt: now}
	role, err := queries.DatabaseRole(ctx, tx)
	if err != nil {
		return nil, err
	}
	if role.Standby {
		r.Standby = &Standby{ReplayLag: role.ReplayLag}
	}
	if r.ActiveRelease, err = activeRelease(ctx, tx); err != nil {
		return nil, err
	}
	if r.Due, err = due(ctx, tx, now); err != nil {
		return nil, err
	}
	if err = openJobs(ctx, tx, r); err != nil {
		return nil, err
	}
	if r.RecentRounds, err = rounds(ctx, tx, now); err != nil {
		return nil, err
	}
	if r.RoundsTotal, err = queries.StatusRoundsTotal(ctx, tx); err != nil {
		return nil, err
	}
	if r.Duplicates, err = duplicates(ctx, tx, now); err != nil {
		return nil, err
	}
	if r.Workers, r.Queue, err = workers(ctx, tx, now); err != nil {
		return nil, err
	}
	if r.Alerts, r.AlertsTotal, err = openAlerts(ctx, tx); err != nil {
		return nil, err
	}
	return r, nil
}

// MaxOpenAlerts bounds the open alerts a report lists ('probectl alerts list --open' lists them all).
const MaxOpenAlerts = 20

// OpenAlert is an alert still open: a server.down event whose server has not recovered.
type OpenAlert struct {
	ID       string
	Type     string
	Server   string
	State    string
	OpenedAt time.Time
	// Runs are the runs that took the server down.
	Runs []int64
	// Deliveries are how its deliveries went, one per receiver, by receiver name.
	Deliveries []queries.EventDelivery
}

func openAlerts(ctx context.Context, tx pgx.Tx) ([]OpenAlert, int, error) {
	total, err := queries.CountOpenAlerts(ctx, tx)
	if err != nil {
		return nil, 0, err
	}
	listed, err := alerts.List(ctx, tx, alerts.ListOptions{Open: true, Limit: MaxOpenAlerts})
	if err != nil {
		return nil, 0, fmt.Errorf("open alerts: %w", err)
	}
	out := make([]OpenAlert, 0, len(listed))
	for _, e := range listed {
		a := OpenAlert{ID: e.ID, Type: e.Type, OpenedAt: e.CreatedAt, Runs: e.Runs, Deliveries: e.Deliveries}
		if e.Server != nil {
			a.Server = *e.Server
		}
		if e.State != nil {
			a.State = *e.State
		}
		out = append(out, a)
	}
	return out, int(total), nil
}

func activeRelease(ctx context.Context, tx pgx.Tx) (*Release, error) {
	rel, err := queries.ActiveRelease(ctx, tx)
	if errors.Is(err, queries.ErrNoRelease) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sched, err := queries.ActiveSchedule(ctx, tx)
	if err != nil && !errors.Is(err, queries.ErrNoRelease) {
		return nil, err
	}
	return &Release{ID: rel.ID, Version: rel.Version, Kind: rel.Kind, DeployedAt: rel.DeployedAt,
		DeployedBy: rel.DeployedBy, Carried: rel.Carried.WithDefaults(), Every: sched.Every}, nil
}

func due(ctx context.Context, tx pgx.Tx, now time.Time) (Due, error) {
	d, err := queries.StatusDueServers(ctx, tx, now, InFlight)
	if err != nil {
		return Due{}, err
	}
	out := Due{Count: d.Count, Held: d.Held}
	if o := d.Oldest; o != nil {
		out.Oldest = &DueServer{DueServer: *o, Overdue: nonNegative(now.Sub(o.NextCheckAt))}
	}
	return out, nil
}

// openJobs counts every open job and the stale ones, and keeps the oldest MaxOpenJobs.
func openJobs(ctx context.Context, tx pgx.Tx, r *Report) error {
	r.OpenJobs = []OpenJob{}
	return audit.EachOpenJob(ctx, tx, r.GeneratedAt, InFlight, func(j OpenJob) error {
		r.OpenCount++
		if j.Stale {
			r.StaleCount++
		}
		if len(r.OpenJobs) < MaxOpenJobs {
			j.Age = nonNegative(j.Age)
			r.OpenJobs = append(r.OpenJobs, j)
		}
		return nil
	})
}

func rounds(ctx context.Context, tx pgx.Tx, now time.Time) ([]Round, error) {
	rs, err := queries.StatusRecentRounds(ctx, tx, RecentRounds, now)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	degraded, err := queries.DegradedRounds(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Round, 0, len(rs))
	for _, r := range rs {
		rd := Round{RecentRound: r}
		if d, ok := degraded[r.ID]; ok {
			rd.Degraded = &d
		}
		out = append(out, rd)
	}
	return out, nil
}

func duplicates(ctx context.Context, tx pgx.Tx, now time.Time) (Duplicates, error) {
	d := Duplicates{Since: now.Add(-DuplicatesPeriod), Until: now, Window: audit.DefaultWindow}
	rep, err := audit.DuplicatesTx(ctx, tx, audit.DuplicatesParams{Since: d.Since, Until: d.Until, Window: d.Window})
	if err != nil {
		return Duplicates{}, fmt.Errorf("duplicates in the last 24 h: %w", err)
	}
	d.Report = rep
	return d, nil
}

func nonNegative(d time.Duration) time.Duration {
	return max(d, 0)
}
