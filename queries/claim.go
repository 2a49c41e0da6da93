package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/probectl/probectl/probe/settings"
)

// ClaimLockKey is the transaction-level advisory lock key probe_claim takes before it reads (and
// probe_claim_lease and probe_claim_due take shared):
// 0x70726f6265, "probe" in ASCII. Anything else that must not run alongside a claim can take it too.
const ClaimLockKey int64 = 482956239461

// InFlightWindow is how long a job counts as open: past it a round closes the job as abandoned
// when it starts (CloseAbandoned).
// A round's settings must fit a job's worst case inside it (probe.Settings.Validate).
const InFlightWindow = settings.InFlightWindow

// ClaimParams are the arguments of one claim.
type ClaimParams struct {
	RoundID    int64
	Invocation int
	// Limit is the most servers this claim takes.
	Limit int
	// MinSpacing is the spacing guard: no server with a job requested within it (0 turns it off).
	MinSpacing time.Duration
	// InFlight is the in-flight window; 0 means InFlightWindow.
	InFlight time.Duration
	// Now, when set, stands in for the time of the claim.
	Now *time.Time
	// Timeline, when set, is the timeline the round's failover journal was opened on
	// (CurrentTimeline; under a worker, the invocation's journal): on another, the
	// claim claims nothing. Judged in the claim's own statement, so that a claim sent after a
	// failover, to the promoted standby, claims no server whose claim the failover lost.
	Timeline *int64
}

// ClaimedJob is one job a claim created: what the prober needs to check the server and to finish.
type ClaimedJob struct {
	JobID    int64  `db:"job_id"`
	ServerID int64  `db:"server_id"`
	Slug     string `db:"slug"`
	URL      string `db:"endpoint_url"`
	Kind     string `db:"kind"`
	// DueAt is the server's next_check_at when it was claimed.
	DueAt time.Time `db:"due_at"`
	// ClaimedNextCheckAt is the server's next_check_at as the claim left it, its lease's end: the
	// finish advances it only if it still has this value (a compare-and-set).
	ClaimedNextCheckAt time.Time `db:"claimed_next_check_at"`
	Reason             string    `db:"reason"` // scheduled | maintainer_claim
	RequestedAt        time.Time `db:"requested_at"`
	// StoredTransport is the server's transport column as stored (NULL for http servers and for
	// mcp servers stored before the column); Transport is what the check uses.
	StoredTransport *string `db:"transport"`
	Transport       string  `db:"-"` // an mcp server's transport (see Transport); "" for http
}

// Claim calls probe_claim_due: it claims up to p.Limit due servers, one new job each, each server
// leased until its job's window ends. A server whose job is open past the window is not claimed
// until CloseAbandoned closes the job. Call it on a pool, not in a transaction of your own: the
// lock is held until the transaction ends.
func Claim(ctx context.Context, db DBTX, p ClaimParams) ([]ClaimedJob, error) {
	inFlight := p.InFlight
	if inFlight <= 0 {
		inFlight = InFlightWindow
	}
	jobs, err := rowsOf[ClaimedJob](ctx, db, "Claim", pgx.StrictNamedArgs{"round_id": p.RoundID,
		"invocation": p.Invocation, "limit": p.Limit, "min_spacing": p.MinSpacing, "in_flight": inFlight,
		"now": p.Now, "timeline": p.Timeline})
	if err != nil {
		return nil, fmt.Errorf("claim due servers: %w", err)
	}
	return withTransports(jobs), nil
}

// withTransports sets each job's Transport from its kind and stored transport.
func withTransports(jobs []ClaimedJob) []ClaimedJob {
	for i := range jobs {
		if t := Transport(jobs[i].Kind, jobs[i].StoredTransport); t != nil {
			jobs[i].Transport = *t
		}
	}
	return jobs
}

// LostClaimParams name the jobs LostClaim looks for: those of invocation Invocation of round
// RoundID requested within Since, past AfterJob, that the invocation does not hold (Known), at
// most Limit.
type LostClaimParams struct {
	RoundID    int64
	Invocation int
	AfterJob   int64
	Known      []int64
	Since      time.Duration
	Limit      int
}

// LostClaim returns the jobs of a claim that committed while its answer was lost (see its SQL):
// the invocation's own, to be checked as claimed.
func LostClaim(ctx context.Context, db DBTX, p LostClaimParams) ([]ClaimedJob, error) {
	known := p.Known
	if known == nil {
		known = []int64{}
	}
	jobs, err := rowsOf[ClaimedJob](ctx, db, "LostClaim", pgx.StrictNamedArgs{"round_id": p.RoundID,
		"invocation": p.Invocation, "after_job": p.AfterJob, "known": known, "in_flight": InFlightWindow,
		"since": p.Since, "limit": p.Limit})
	if err != nil {
		return nil, fmt.Errorf("look for a claim whose answer was lost: %w", err)
	}
	return withTransports(jobs), nil
}

// PreviewServer is what a claim would decide now for one server whose next check time has passed.
type PreviewServer struct {
	ServerID        int64      `db:"server_id"`
	Slug            string     `db:"slug"`
	Status          string     `db:"status"`
	NextCheckAt     time.Time  `db:"next_check_at"`
	Reason          string     `db:"reason"` // the reason its job would carry: scheduled | maintainer_claim
	LastRequestedAt *time.Time `db:"last_requested_at"`
	// State (probe_claim_state): claimable, abandoned (claimable once a round's start closed its
	// job), open_job, spacing, paused or delisted.
	State string `db:"state"`
	// ClaimableAt is when the server becomes claimable if nothing else changes; nil when paused or
	// delisted.
	ClaimableAt *time.Time `db:"claimable_at"`
}

// ClaimPreview lists the servers whose next check time has passed and what a claim would do with
// each, in claim order. It only reads.
func ClaimPreview(ctx context.Context, db DBTX, minSpacing, inFlight time.Duration, now *time.Time) ([]PreviewServer, error) {
	if inFlight <= 0 {
		inFlight = InFlightWindow
	}
	out, err := rowsOf[PreviewServer](ctx, db, "ClaimPreview", minSpacing, inFlight, now)
	if err != nil {
		return nil, fmt.Errorf("preview the claim: %w", err)
	}
	return out, nil
}

// CloseAbandoned closes the jobs open past the in-flight window (0: InFlightWindow) as abandoned, as
// of now (the database's clock when nil), and says how many it closed: their servers are due
// again. A round runs it once, before its claims (probe.StartRound).
func CloseAbandoned(ctx context.Context, db DBTX, inFlight time.Duration, now *time.Time) (int, error) {
	if inFlight <= 0 {
		inFlight = InFlightWindow
	}
	c, err := rowOf[struct {
		Closed int `db:"closed"`
	}](ctx, db, "CloseAbandoned", inFlight, now)
	if err != nil {
		return 0, fmt.Errorf("close abandoned jobs: %w", err)
	}
	return c.Closed, nil
}

// ServerNextCheck is what decides one server's next claim, by the claim's own rules
// (probe_claim_state).
type ServerNextCheck struct {
	// State: claimable, abandoned, open_job, scheduled, spacing, paused or delisted.
	State  string `db:"state"`
	Reason string `db:"reason"` // scheduled | maintainer_claim
	// ClaimableAt is when the server becomes claimable if nothing else changes; nil when paused or
	// delisted.
	ClaimableAt     *time.Time `db:"claimable_at"`
	OpenJobID       *int64     `db:"open_job_id"`
	OpenRequestedAt *time.Time `db:"open_requested_at"`
	// SpacedSince is the last job requested within the spacing guard; nil: none.
	SpacedSince *time.Time    `db:"spaced_since"`
	MinSpacing  time.Duration `db:"min_spacing"` // the spacing guard judged by
}

// GetServerNextCheck reads what decides server id's next claim as of at, with the active release's
// spacing guard, else defaultSpacing. ErrNoServer: no such server.
func GetServerNextCheck(ctx context.Context, db DBTX, id int64, at time.Time, defaultSpacing time.Duration) (ServerNextCheck, error) {
	n, err := rowOf[ServerNextCheck](ctx, db, "ServerNextCheck", pgx.StrictNamedArgs{
		"id": id, "at": at, "default_spacing": defaultSpacing, "in_flight": InFlightWindow})
	if errors.Is(err, pgx.ErrNoRows) {
		return ServerNextCheck{}, ErrNoServer
	}
	if err != nil {
		return ServerNextCheck{}, fmt.Errorf("read server next check: %w", err)
	}
	return n, nil
}

// CountNotDue counts the active servers not due yet and says when the soonest becomes due.
func CountNotDue(ctx context.Context, db DBTX, now *time.Time) (int, *time.Time, error) {
	c, err := rowOf[struct {
		Servers int        `db:"servers"`
		Soonest *time.Time `db:"soonest"`
	}](ctx, db, "CountNotDue", now)
	if err != nil {
		return 0, nil, fmt.Errorf("count servers not due: %w", err)
	}
	return c.Servers, c.Soonest, nil
}

// leasedCount is CountLeased's row.
type leasedCount struct {
	Leased int `db:"leased"`
}

// CountLeased counts the active servers in flight under a lease: a claim moved their next check
// time to their open job's lease end, so they are not due until it, nor claimable.
func CountLeased(ctx context.Context, db DBTX, inFlight time.Duration, now *time.Time) (int, error) {
	if inFlight <= 0 {
		inFlight = InFlightWindow
	}
	c, err := rowOf[leasedCount](ctx, db, "CountLeased", now, inFlight)
	if err != nil {
		return 0, fmt.Errorf("count leased servers: %w", err)
	}
	return c.Leased, nil
}
