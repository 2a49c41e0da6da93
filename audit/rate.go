package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// MaxRequestsPerRound is the promise's budget: operators are told to expect at most one round of
// at most this many requests per check interval.
const MaxRequestsPerRound = 8

// RateParams choose the rounds the rate audit looks at: those requested in [Since, Until).
type RateParams struct {
	// Since is required.
	Since time.Time
	// Until zero means the database's now() at the start of the audit's transaction.
	Until time.Time
}

// RateServer is one server's rounds and requests over the audit window, against the promise.
type RateServer struct {
	ServerID      int64
	Slug          string
	Plan          string
	CheckInterval time.Duration
	// Rounds is the number of jobs requested in the window; Rechecks of them were explicit
	// re-checks (maintainer_claim or manual), which the promise does not count against us.
	Rounds   int64
	Rechecks int64
	// AllowedRounds is the most rounds one per check interval fits in the window.
	AllowedRounds int64
	// Requests is what the rounds' runs sent; MaxRequests the most one run sent.
	Requests    int64
	MaxRequests int
	// ShortGaps counts scheduled rounds requested less than the check interval after the previous
	// round of the server (which may lie before Since): each breaks "one round per interval".
	ShortGaps int64
	// ClosestGap is the smallest gap between two consecutive rounds, nil with a single round.
	ClosestGap *time.Duration
}

// AllowedRequests is what the promise allows over the window: MaxRequestsPerRound per allowed
// round.
func (s RateServer) AllowedRequests() int64 { return s.AllowedRounds * MaxRequestsPerRound }

// Over says whether the server got more than it was promised: two scheduled rounds within one
// check interval, or a round of more than MaxRequestsPerRound requests.
func (s RateServer) Over() bool { return s.ShortGaps > 0 || s.MaxRequests > MaxRequestsPerRound }

// RateReport is the answer to "did any operator get more than we promised?".
type RateReport struct {
	Since, Until time.Time
	// Servers, Rounds and Requests total every server with a round in the window.
	Servers, Rounds, Requests int64
	// Over lists the servers over the promise, in server id order.
	Over []RateServer
}

// Rate runs the request-rate audit in its own READ ONLY, REPEATABLE READ transaction.
func Rate(ctx context.Context, db queries.DB, p RateParams) (*RateReport, error) {
	return readOnly(ctx, db, func(tx pgx.Tx) (*RateReport, error) { return RateTx(ctx, tx, p) })
}

// RateTx runs the request-rate audit inside the caller's READ ONLY transaction. Every server's
// row streams past; only those over the promise are kept. It sets the audits' planner settings
// for the rest of tx (see DuplicatesTx).
func RateTx(ctx context.Context, tx pgx.Tx, p RateParams) (*RateReport, error) {
	since, until, err := enterWindow(ctx, tx, p.Since, p.Until)
	if err != nil {
		return nil, err
	}
	r := &RateReport{Since: since, Until: until, Over: []RateServer{}}
	span := until.Sub(since)
	err = queries.AuditRate(ctx, tx, since, until, func(row queries.AuditRateRow) error {
		s := RateServer{ServerID: row.ServerID, Slug: row.Slug, Plan: row.Plan, CheckInterval: row.CheckInterval,
			Rounds: row.Rounds, Rechecks: row.Rechecks, Requests: row.Requests, MaxRequests: row.MaxRequests,
			ShortGaps: row.ShortGaps, ClosestGap: row.ClosestGap, AllowedRounds: allowedRounds(span, row.CheckInterval)}
		r.Servers++
		r.Rounds += s.Rounds
		r.Requests += s.Requests
		if s.Over() {
			r.Over = append(r.Over, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// allowedRounds is how many rounds spaced one interval apart fit in [since, since+span).
func allowedRounds(span, interval time.Duration) int64 {
	if interval <= 0 {
		return 0
	}
	return int64((span + interval - 1) / interval)
}

type rateServerJSON struct {
	ServerID             int64    `json:"server_id"`
	Slug                 string   `json:"slug"`
	Plan                 string   `json:"plan"`
	CheckIntervalSeconds Seconds  `json:"check_interval_seconds"`
	Rounds               int64    `json:"rounds"`
	AllowedRounds        int64    `json:"allowed_rounds"`
	Rechecks             int64    `json:"rechecks"`
	Requests             int64    `json:"requests"`
	AllowedRequests      int64    `json:"allowed_requests"`
	MaxRequests          int      `json:"max_requests_per_round"`
	ShortGaps            int64    `json:"short_gaps"`
	ClosestGapSeconds    *Seconds `json:"closest_gap_seconds"`
}

type rateJSON struct {
	Since            time.Time        `json:"since"`
	Until            time.Time        `json:"until"`
	PromisedRequests int              `json:"promised_max_requests_per_round"`
	Servers          int64            `json:"servers"`
	Rounds           int64            `json:"rounds"`
	Requests         int64            `json:"requests"`
	OverCount        int              `json:"over_count"`
	Over             []rateServerJSON `json:"over"`
}

// MarshalJSON writes the documented shape (docs/audit.md).
func (r RateReport) MarshalJSON() ([]byte, error) {
	out := rateJSON{Since: r.Since.UTC(), Until: r.Until.UTC(), PromisedRequests: MaxRequestsPerRound,
		Servers: r.Servers, Rounds: r.Rounds, Requests: r.Requests, OverCount: len(r.Over),
		Over: make([]rateServerJSON, 0, len(r.Over))}
	for _, s := range r.Over {
		out.Over = append(out.Over, rateServerJSON{ServerID: s.ServerID, Slug: s.Slug, Plan: s.Plan,
			CheckIntervalSeconds: Seconds(s.CheckInterval), Rounds: s.Rounds, AllowedRounds: s.AllowedRounds,
			Rechecks: s.Rechecks, Requests: s.Requests, AllowedRequests: s.AllowedRequests(),
			MaxRequests: s.MaxRequests, ShortGaps: s.ShortGaps, ClosestGapSeconds: secondsPtr(s.ClosestGap)})
	}
	return json.Marshal(out)
}
