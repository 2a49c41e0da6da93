package queries

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// OutcomeCount is how many active servers last ran with an outcome ("" for never).
type OutcomeCount struct {
	Outcome string `db:"outcome"`
	Servers int64  `db:"servers"`
}

// DirectoryCounts counts the active servers by the outcome of their last run.
func DirectoryCounts(ctx context.Context, db DBTX) ([]OutcomeCount, error) {
	return collect[OutcomeCount](ctx, db, "DirectoryCounts")
}

// DirectoryEntry is one server as the directory view shows it, from the rollup.
type DirectoryEntry struct {
	Slug         string     `db:"slug" json:"slug"`
	Kind         string     `db:"kind" json:"kind"`
	Status       string     `db:"status" json:"status"`
	LastOutcome  string     `db:"last_outcome" json:"last_outcome"`
	FailingSince *time.Time `db:"failing_since" json:"failing_since"`
	LastRunAt    *time.Time `db:"last_run_at" json:"last_run_at"`
	Uptime30d    *float64   `db:"uptime_30d" json:"uptime_30d"`
	CertNotAfter *time.Time `db:"cert_not_after" json:"cert_not_after"`
}

// listedEntry is a DirectoryEntry of a bounded list, with how many the whole list holds.
type listedEntry struct {
	Slug         string     `db:"slug"`
	Kind         string     `db:"kind"`
	LastOutcome  string     `db:"last_outcome"`
	FailingSince *time.Time `db:"failing_since"`
	LastRunAt    *time.Time `db:"last_run_at"`
	Uptime30d    *float64   `db:"uptime_30d"`
	CertNotAfter *time.Time `db:"cert_not_after"`
	Total        int64      `db:"total"`
}

func bounded(rows []listedEntry) ([]DirectoryEntry, int64) {
	out := make([]DirectoryEntry, 0, len(rows))
	var total int64
	for _, r := range rows {
		total = r.Total
		out = append(out, DirectoryEntry{Slug: r.Slug, Kind: r.Kind, Status: "active", LastOutcome: r.LastOutcome,
			FailingSince: r.FailingSince, LastRunAt: r.LastRunAt, Uptime30d: r.Uptime30d, CertNotAfter: r.CertNotAfter})
	}
	return out, total
}

// DirectoryFailing returns up to limit active servers failing now, longest first, and how many.
func DirectoryFailing(ctx context.Context, db DBTX, limit int) ([]DirectoryEntry, int64, error) {
	rows, err := collect[listedEntry](ctx, db, "DirectoryFailing", limit)
	if err != nil {
		return nil, 0, err
	}
	out, total := bounded(rows)
	return out, total, nil
}

// DirectoryExpiring returns up to limit active servers whose certificate expires before, soonest
// first, and how many.
func DirectoryExpiring(ctx context.Context, db DBTX, limit int, before time.Time) ([]DirectoryEntry, int64, error) {
	rows, err := collect[listedEntry](ctx, db, "DirectoryExpiring", limit, before)
	if err != nil {
		return nil, 0, err
	}
	out, total := bounded(rows)
	return out, total, nil
}

// ServerRollup returns one server's directory entry (nil: no such slug).
func ServerRollup(ctx context.Context, db DBTX, slug string) (*DirectoryEntry, error) {
	return optionalRow[DirectoryEntry](ctx, db, "ServerRollup", slug)
}

// SeriesPoint is one run of a server's charts.
type SeriesPoint struct {
	StartedAt time.Time     `db:"started_at"`
	Outcome   string        `db:"outcome"`
	Duration  time.Duration `db:"duration"`
	Tools     *int          `db:"tools"`
}

// ServerSeries returns a server's runs over the 30 days before at, oldest first, without those at
// probectl's fault.
func ServerSeries(ctx context.Context, db DBTX, serverID int64, at time.Time) ([]SeriesPoint, error) {
	from, to := monthKeys(at)
	return collect[SeriesPoint](ctx, db, "ServerSeries", pgx.StrictNamedArgs{"server_id": serverID, "at": at, "key_from": from, "key_to": to})
}

// RunTotal is the count and duration histogram of the runs of one kind and outcome.
type RunTotal struct {
	Kind       string    `db:"kind"`
	Outcome    string    `db:"outcome"`
	Runs       int64     `db:"runs"`
	SecondsSum float64   `db:"seconds_sum"`
	Bounds     []float64 `db:"bounds"`
	// Buckets[i] counts the runs that took at most Bounds[i] seconds.
	Buckets []int64 `db:"buckets"`
}

// RunTotals returns every run ever stored, by kind and outcome (run_totals, kept by a trigger).
func RunTotals(ctx context.Context, db DBTX) ([]RunTotal, error) {
	return collect[RunTotal](ctx, db, "RunTotals")
}
