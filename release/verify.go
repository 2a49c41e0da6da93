package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// Verdicts of a verification. No data is never a pass: too few rounds, or rounds without a single
// job, give inconclusive.
const (
	VerdictPass         = "pass"
	VerdictFail         = "fail"
	VerdictInconclusive = "inconclusive"
)

// DefaultRounds is how many rounds after a release deploy verify reads back by default.
const DefaultRounds = 2

// VerifyRequest says which release to verify and how much to read.
type VerifyRequest struct {
	// ReleaseID is the release to verify; 0 means the active one.
	ReleaseID int64
	// Rounds is how many rounds after the release to read back (default DefaultRounds).
	Rounds int
	// Window is the duplicate-claim window (default audit.DefaultWindow, 10 minutes).
	Window time.Duration
	// Wait, when its Timeout is set, waits for the rounds to exist and finish before reading.
	Wait WaitOptions
	// MaxOkDrop is how many points (0 to 100) the ok share may drop against the baseline before
	// the health check fails; nil means DefaultMaxOkDrop.
	MaxOkDrop *float64
}

// Report is the result of a verification: the rounds read back, each check, and the verdict. It
// marshals to the JSON shape documented in docs/release.md.
type Report struct {
	Release ReleaseSummary `json:"release"`
	// Since is when the release (last) became active: the rounds read back started at or after it.
	Since time.Time `json:"since"`
	// Until is when it stopped being active, nil while it is.
	Until         *time.Time    `json:"until"`
	RoundsWanted  int           `json:"rounds_wanted"`
	WindowSeconds float64       `json:"window_seconds"`
	WaitedSeconds float64       `json:"waited_seconds"`
	Rounds        []RoundReport `json:"rounds"`
	Checks        []Check       `json:"checks"`
	// Health is the figures of the health check.
	Health Health `json:"health"`
	// Functions is the figures of the functions check.
	Functions Functions `json:"functions"`
	Verdict   string    `json:"verdict"`
}

// ReleaseSummary is the release a report is about.
type ReleaseSummary struct {
	ID         int64     `json:"id"`
	Version    string    `json:"version"`
	Kind       string    `json:"kind"`
	Active     bool      `json:"active"`
	DeployedAt time.Time `json:"deployed_at"`
	DeployedBy string    `json:"deployed_by"`
	// Carried are the round settings it ships, with the keys every settings JSON uses.
	settings.Carried
	WaysBack []string `json:"ways_back"`
}

// RoundReport is one row of the incident write-up's table, and a little more.
type RoundReport struct {
	ID                  int64         `json:"id"`
	StartedAt           time.Time     `json:"started_at"`
	FinishedAt          *time.Time    `json:"finished_at"`
	Jobs                int           `json:"jobs"`
	Runs                int           `json:"runs"`
	Servers             int           `json:"servers"`
	OpenJobs            int           `json:"open_jobs"`
	RunsMissingEnvelope int           `json:"runs_missing_envelope"`
	EnvelopesInvalid    int           `json:"envelopes_invalid"`
	SecondClaims        []SecondClaim `json:"second_claims"`
	// State is running, finished, dead or recovered: a dead round's heartbeat stopped, its process
	// is gone; a recovered one is dead too, but every job it claimed has its run (runs recover
	// stored what its spool held), so nothing of it is lost or open: the alerts' rule, under which
	// its round.dead is resolved. A dead round whose jobs were closed as abandoned without a run is
	// dead, not recovered.
	State string `json:"state"`
	// deadOpenJobs and deadLostJobs name a dead round's open jobs and its jobs abandoned without a
	// run, for the check that fails it.
	deadOpenJobs, deadLostJobs []string
}

// SecondClaim is a duplicate pair whose second job is in the round.
type SecondClaim struct {
	ServerID    int64  `json:"server_id"`
	Slug        string `json:"slug"`
	FirstJobID  int64  `json:"first_job_id"`
	SecondJobID int64  `json:"second_job_id"`
	// GapAfterFinishSeconds is the second request minus the first job's finish (the write-up's
	// gap): negative when the two overlapped, nil when the first job is still open.
	GapAfterFinishSeconds *float64 `json:"gap_after_finish_seconds"`
	RequestGapSeconds     float64  `json:"request_gap_seconds"`
	// Explained is an explicit re-check (maintainer claim or manual), which does not fail verify.
	Explained bool `json:"explained"`
}

// Functions names the database functions the functions check compared: every one this probectl
// ships, and those the database lacks or has otherwise (another body, or other overloads).
type Functions struct {
	Shipped []string `json:"shipped"`
	Missing []string `json:"missing"`
	Changed []string `json:"changed"`
}

// Check is one check and its outcome: pass, fail or inconclusive. Items name what failed
// (servers, jobs, rounds or functions, depending on the check).
type Check struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Detail string   `json:"detail"`
	Items  []string `json:"items"`
}

// Verify reads back the first rounds after a release and checks them. Every read of the report
// happens in one READ ONLY transaction: it never writes, and runs on a hot standby. When
// req.Wait.Timeout is set it first waits for the rounds (see WaitOptions); if they do not come in
// time, the report is made from what is there, and is inconclusive.
func Verify(ctx context.Context, pool queries.DB, req VerifyRequest) (*Report, error) {
	req = req.withDefaults()
	if err := ValidateVerify(req); err != nil {
		return nil, err
	}
	var waited time.Duration
	if req.Wait.Timeout > 0 {
		var err error
		if waited, err = waitForRounds(ctx, pool, req); err != nil {
			return nil, err
		}
	}
	var rep *Report
	err := queries.InReadOnlyTx(ctx, pool, func(tx pgx.Tx) error {
		var err error
		rep, err = report(ctx, tx, req)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("verify release: %w", err)
	}
	rep.WaitedSeconds = waited.Seconds()
	return rep, nil
}

func (req VerifyRequest) withDefaults() VerifyRequest {
	if req.Rounds == 0 {
		req.Rounds = DefaultRounds
	}
	if req.Window == 0 {
		req.Window = audit.DefaultWindow
	}
	if req.MaxOkDrop == nil {
		d := DefaultMaxOkDrop
		req.MaxOkDrop = &d
	}
	return req
}

// ValidateVerify checks a request before anything connects: bad input, exit 2, naming the flag.
func ValidateVerify(req VerifyRequest) error {
	return exit.UsageError(req.withDefaults().validate())
}

func (req VerifyRequest) validate() error {
	switch {
	case req.Rounds < 1:
		return input.Errorf("%s %d: must be at least 1", InputRounds, req.Rounds)
	case req.Wait.Timeout < 0:
		return input.Errorf("%s %s: must not be negative", InputWait, req.Wait.Timeout)
	case req.Wait.Timeout > MaxVerifyWait:
		return input.Errorf("%s %s: out of bounds: must be at most 24h", InputWait, req.Wait.Timeout)
	case req.Window < 0:
		return input.Errorf("%s %s: must be positive", InputWindow, req.Window)
	case !(*req.MaxOkDrop >= 0 && *req.MaxOkDrop <= MaxMaxOkDrop): // NaN too
		return input.Errorf("%s %v: out of bounds: must be 0 to 100 (points of the ok share)", InputMaxOkDrop, *req.MaxOkDrop)
	}
	return nil
}

// target is the release to verify, when it (last) became active, and the release active before
// it then (nil: none), the health check's baseline.
type target struct {
	release  Release
	since    time.Time
	baseline *int64
}

// resolveTarget finds the release and when it became active. An unknown --release or no active
// release is bad input.
func resolveTarget(ctx context.Context, db queries.DBTX, releaseID int64) (target, error) {
	var r Release
	var err error
	if releaseID == 0 {
		r, err = queries.ActiveRelease(ctx, db)
		if errors.Is(err, queries.ErrNoRelease) {
			return target{}, exit.UsageError(input.Errorf("no release is active: record one with `probectl deploy record`, or pass %s ID", InputRelease))
		}
	} else {
		r, err = queries.GetRelease(ctx, db, releaseID)
		if errors.Is(err, queries.ErrNoRelease) {
			return target{}, exit.UsageError(input.Errorf("%s %d: no such release (see `probectl deploy list`)", InputRelease, releaseID))
		}
	}
	if err != nil {
		return target{}, err
	}
	since, baseline := r.DeployedAt, r.PreviousID
	last, err := queries.LastActivation(ctx, db, r.ID)
	switch {
	case err == nil:
		since, baseline = last.At, last.FromReleaseID
	case !errors.Is(err, queries.ErrNoRelease):
		return target{}, err
	}
	return target{release: r, since: since, baseline: baseline}, nil
}

// report reads everything from tx (one snapshot) and runs the checks.
func report(ctx context.Context, tx pgx.Tx, req VerifyRequest) (*Report, error) {
	tg, err := resolveTarget(ctx, tx, req.ReleaseID)
	if err != nil {
		return nil, err
	}
	until, err := queries.ReleaseActiveUntil(ctx, tx, tg.release.ID, tg.since)
	if err != nil {
		return nil, err
	}
	rounds, err := queries.VerifyRounds(ctx, tx, tg.release.ID, tg.since, req.Rounds)
	if err != nil {
		return nil, err
	}
	rep := &Report{Release: summarize(tg.release), Since: tg.since.UTC(), Until: until,
		RoundsWanted: req.Rounds, WindowSeconds: req.Window.Seconds(), Rounds: make([]RoundReport, 0, len(rounds))}
	ids := make([]int64, 0, len(rounds))
	for _, r := range rounds {
		ids = append(ids, r.ID)
		rr := RoundReport{ID: r.ID, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
			Jobs: r.Jobs, Runs: r.Runs, Servers: r.Servers, OpenJobs: r.OpenJobs,
			RunsMissingEnvelope: r.RunsMissingEnvelope, SecondClaims: []SecondClaim{}, State: queries.RoundRunning}
		switch {
		case r.FinishedAt != nil:
			rr.State = queries.RoundFinished
		case r.Dead && r.Recovered:
			rr.State = queries.RoundRecovered
		case r.Dead:
			rr.State = queries.RoundDead
			if rr.deadOpenJobs, rr.deadLostJobs, err = deadJobsOf(ctx, tx, r.ID); err != nil {
				return nil, err
			}
		}
		rep.Rounds = append(rep.Rounds, rr)
	}
	rep.Checks = append(rep.Checks, checkRoundsFound(rep), checkJobsFound(rep), checkJobsRunsServers(rep),
		checkOpenJobs(rep), checkEnvelopesPresent(rep))
	envelopes, err := checkEnvelopesValid(ctx, tx, rep, ids)
	if err != nil {
		return nil, err
	}
	dups, err := checkDuplicates(ctx, tx, rep, tg.since, until, req.Window)
	if err != nil {
		return nil, err
	}
	functions, fnFigures, err := checkFunctions(ctx, tx)
	if err != nil {
		return nil, err
	}
	health, figures, err := checkHealth(ctx, tx, rep, ids, tg.baseline, tg.since, *req.MaxOkDrop)
	if err != nil {
		return nil, err
	}
	rep.Health, rep.Functions = figures, fnFigures
	rep.Checks = append(rep.Checks, envelopes, dups, functions, checkLease(tg.release), health)
	rep.Verdict = verdict(rep.Checks)
	return rep, nil
}

// verdict: any failure fails; otherwise any missing data is inconclusive; otherwise pass.
func verdict(checks []Check) string {
	out := VerdictPass
	for _, c := range checks {
		switch c.Status {
		case VerdictFail:
			return VerdictFail
		case VerdictInconclusive:
			out = VerdictInconclusive
		}
	}
	return out
}

func summarize(r Release) ReleaseSummary {
	ways := r.WaysBack
	if ways == nil {
		ways = []string{}
	}
	return ReleaseSummary{ID: r.ID, Version: r.Version, Kind: r.Kind, Active: r.Active, DeployedAt: r.DeployedAt,
		DeployedBy: r.DeployedBy, Carried: r.Carried.WithDefaults(), WaysBack: ways}
}
