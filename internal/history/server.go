package history

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// LastRuns is how many of a server's runs ServerView carries.
const LastRuns = 10

// ServerView is what a maintainer asks about one server, as of At.
type ServerView struct {
	At     time.Time
	Server queries.Server
	// StatusChange is the last recorded pause, resume or delisting (nil: never changed).
	StatusChange *queries.StatusChange
	Next         NextCheck
	// Uptime over 24 h, 7 d and 30 d: runs ok over runs not at probectl's fault; nil: none.
	Uptime24h, Uptime7d, Uptime30d *float64
	// LatencyP50 and LatencyP95 are of its ok checks over 30 days; nil: none.
	LatencyP50, LatencyP95 *time.Duration
	Cert                   *queries.ServerCert
	Tools                  *queries.ServerTools
	// Auth is the newest run's result auth ("required" or empty).
	Auth     string
	LastRuns []queries.Run
}

// CertDaysLeft is how many whole days the certificate has left at At (negative: expired).
func (v ServerView) CertDaysLeft() *int {
	if v.Cert == nil {
		return nil
	}
	d := int(math.Floor(v.Cert.CertNotAfter.Sub(v.At).Hours() / 24))
	return &d
}

// NextCheck says when a server will next be claimed, and why then.
type NextCheck struct {
	// State: due, spacing, open_job, abandoned, scheduled, paused or delisted (probe_claim_state's,
	// with its "claimable" called due).
	State string
	// At is when it becomes claimable; nil when it never will as it stands (paused, delisted).
	At  *time.Time
	Why string
}

// ShowServer reads one server's view as of now (the database's clock when nil).
// queries.ErrNoServer: no such slug.
func ShowServer(ctx context.Context, db queries.DBTX, slug string, now *time.Time) (*ServerView, error) {
	var v *ServerView
	err := read(ctx, db, func(db queries.DBTX) error {
		var err error
		v, err = showServer(ctx, db, slug, now)
		return err
	})
	return v, err
}

func showServer(ctx context.Context, db queries.DBTX, slug string, now *time.Time) (*ServerView, error) {
	s, err := queries.GetServerBySlug(ctx, db, slug)
	if err != nil {
		return nil, err
	}
	if err := queries.OneServerPlanSettings(ctx, db); err != nil {
		return nil, err
	}
	at, err := queries.StatusNow(ctx, db, now)
	if err != nil {
		return nil, err
	}
	v := &ServerView{At: at, Server: s}
	if v.StatusChange, err = queries.LastStatusChange(ctx, db, s.ID); err != nil {
		return nil, err
	}
	next, err := queries.GetServerNextCheck(ctx, db, s.ID, at, settings.Default().MinSpacing.D())
	if err != nil {
		return nil, err
	}
	v.Next = nextCheck(s, next, v.StatusChange)
	fig, err := queries.GetServerFigures(ctx, db, s.ID, at)
	if err != nil {
		return nil, err
	}
	v.Uptime24h, v.Uptime7d, v.Uptime30d = ratio(fig.OK24h, fig.Counted24h), ratio(fig.OK7d, fig.Counted7d), ratio(fig.OK30d, fig.Counted30d)
	v.LatencyP50, v.LatencyP95 = fig.P50, fig.P95
	if v.Cert, err = queries.GetServerCert(ctx, db, s.ID, at); err != nil {
		return nil, err
	}
	if v.Tools, err = queries.GetServerTools(ctx, db, s.ID); err != nil {
		return nil, err
	}
	auth, err := queries.GetServerAuth(ctx, db, s.ID)
	if err != nil {
		return nil, err
	}
	if auth != nil && auth.Auth != nil {
		v.Auth = *auth.Auth
	}
	if v.AuthRequired() {
		// Its tools were not seen: an older run's count is not presented as current.
		v.Tools = nil
	}
	if v.LastRuns, err = serverRuns(ctx, db, s.ID, queries.RunFilter{Server: slug, Limit: LastRuns}, at); err != nil {
		return nil, err
	}
	return v, nil
}

// ratio is ok/counted, or nil when nothing counted. A run at probectl's fault is neither.
func ratio(ok, counted int64) *float64 {
	if counted == 0 {
		return nil
	}
	r := float64(min(ok, counted)) / float64(counted)
	return &r
}

// nextCheck says in words what the claim's own rules decided for the server (n, read with
// probe_claim_state, the SQL the claim and the dry run use: migrations/00021_claim_due.sql). It
// decides nothing itself. The claim's "claimable" is shown as "due", at the time it became due.
func nextCheck(s queries.Server, n queries.ServerNextCheck, change *queries.StatusChange) NextCheck {
	switch n.State {
	case "paused", "delisted":
		why := s.Status + ": never claimed until 'probectl servers resume " + s.Slug + "'"
		if change != nil && change.StatusTo == s.Status {
			why = fmt.Sprintf("%s by %s at %s (%s): never claimed until 'probectl servers resume %s'", s.Status,
				change.ChangedBy, change.ChangedAt.Format(time.RFC3339), change.Reason, s.Slug)
		}
		return NextCheck{State: n.State, Why: why}
	case "open_job":
		return NextCheck{State: n.State, At: n.ClaimableAt, Why: fmt.Sprintf("job %d has been in flight since %s: its finish schedules the next check; "+
			"if it never finishes it is closed as abandoned at %s", deref(n.OpenJobID),
			n.OpenRequestedAt.Format(time.RFC3339), n.ClaimableAt.Format(time.RFC3339))}
	case "abandoned":
		return NextCheck{State: n.State, At: n.ClaimableAt, Why: fmt.Sprintf("job %d, requested at %s, is still open past the in-flight window of %s: "+
			"the next round closes it as abandoned when it starts, then claims the server", deref(n.OpenJobID),
			n.OpenRequestedAt.Format(time.RFC3339), render.Duration(queries.InFlightWindow))}
	case "scheduled":
		return NextCheck{State: n.State, At: n.ClaimableAt, Why: fmt.Sprintf("every %s (%s plan) after its last check", render.Duration(s.CheckInterval), s.Plan)}
	case "spacing":
		return NextCheck{State: n.State, At: n.ClaimableAt, Why: fmt.Sprintf("due, held by the spacing guard: its last job was requested at %s, less than %s before",
			n.SpacedSince.Format(time.RFC3339), render.Duration(n.MinSpacing))}
	case "claimable":
		due := s.NextCheckAt
		why := "due now: the next round claims it"
		if n.Reason == "maintainer_claim" {
			why = "due now: a maintainer asked for a re-check (passes the spacing guard)"
		}
		return NextCheck{State: "due", At: &due, Why: why}
	}
	return NextCheck{State: n.State, At: n.ClaimableAt, Why: n.State}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// AuthRequired reports whether the server's newest run met an auth challenge, so that its tools
// were not verified.
func (v *ServerView) AuthRequired() bool { return v.Auth == AuthRequired }

// AuthRequired is the auth a run records for a server behind bearer auth.
const AuthRequired = "required"
