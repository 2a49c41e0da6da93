package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// ServerFigures are a server's run counts and latency over the 30 days before a moment.
type ServerFigures struct {
	OK24h      int64 `db:"ok_24h"`
	Counted24h int64 `db:"counted_24h"`
	OK7d       int64 `db:"ok_7d"`
	Counted7d  int64 `db:"counted_7d"`
	OK30d      int64 `db:"ok_30d"`
	Counted30d int64 `db:"counted_30d"`
	// P50 and P95 are the latency of its ok checks; nil when it has none.
	P50 *time.Duration `db:"p50"`
	P95 *time.Duration `db:"p95"`
}

// RunKeyLag bounds how long after its job was requested a run's check starts (by the clocks of
// the database and the prober): the claim starts it at once, and a job is closed as abandoned
// after its in-flight window. A read of the runs started from T on reads only the partitions of
// the jobs requested from T - RunKeyLag on (migrations/00019_partition_reads.sql); the same lag
// bounds how much later than at a run started at at can be keyed.
const RunKeyLag = 24 * time.Hour

// monthKeys are the partition keys of the runs started in the 30 days before at.
func monthKeys(at time.Time) (from, to time.Time) {
	return at.Add(-30*24*time.Hour - RunKeyLag), at.Add(RunKeyLag)
}

// OneServerPlanSettings makes the rest of the transaction plan without parallel workers, for the
// reads of one server's runs (a few rows from each of many partitions).
func OneServerPlanSettings(ctx context.Context, db DBTX) error {
	if _, err := db.Exec(ctx, SQL("OneServerPlanSettings")); err != nil {
		return fmt.Errorf("set the planner settings of a server's reads: %w", err)
	}
	return nil
}

// GetServerFigures reads a server's figures as of at.
func GetServerFigures(ctx context.Context, db DBTX, serverID int64, at time.Time) (ServerFigures, error) {
	from, to := monthKeys(at)
	rows, err := db.Query(ctx, SQL("ServerFigures"), pgx.StrictNamedArgs{"server_id": serverID, "at": at, "key_from": from, "key_to": to})
	if err != nil {
		return ServerFigures{}, fmt.Errorf("read server figures: %w", err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ServerFigures])
	if err != nil {
		return ServerFigures{}, fmt.Errorf("read server figures: %w", err)
	}
	return f, nil
}

// ServerCert is the certificate a server's newest run within 30 days saw.
type ServerCert struct {
	SeenAt       time.Time `db:"seen_at"`
	CertNotAfter time.Time `db:"cert_not_after"`
}

// GetServerCert returns the certificate last seen, or nil when no run of the 30 days before at saw
// one.
func GetServerCert(ctx context.Context, db DBTX, serverID int64, at time.Time) (*ServerCert, error) {
	from, to := monthKeys(at)
	return optionalRow[ServerCert](ctx, db, "ServerCert", pgx.StrictNamedArgs{"server_id": serverID, "at": at, "key_from": from, "key_to": to})
}

// ServerTools is the tool count a server's newest run listed and since when it has been so.
type ServerTools struct {
	Count     int       `db:"count"`
	ChangedAt time.Time `db:"changed_at"`
}

// GetServerTools returns the tool count, or nil when no run listed tools.
func GetServerTools(ctx context.Context, db DBTX, serverID int64) (*ServerTools, error) {
	return optionalRow[ServerTools](ctx, db, "ServerTools", serverID)
}

// ServerAuth is what a server's newest run says of auth.
type ServerAuth struct {
	Auth *string `db:"auth"`
}

// GetServerAuth returns the auth of the server's newest run, or nil when it has no run.
func GetServerAuth(ctx context.Context, db DBTX, serverID int64) (*ServerAuth, error) {
	return optionalRow[ServerAuth](ctx, db, "ServerAuth", serverID)
}

// StatusChange is one recorded change of a server's status: who and why.
type StatusChange struct {
	StatusFrom string    `db:"status_from"`
	StatusTo   string    `db:"status_to"`
	Reason     string    `db:"reason"`
	ChangedBy  string    `db:"changed_by"`
	ChangedAt  time.Time `db:"changed_at"`
}

// LastStatusChange returns a server's latest recorded status change, or nil when none was.
func LastStatusChange(ctx context.Context, db DBTX, serverID int64) (*StatusChange, error) {
	return optionalRow[StatusChange](ctx, db, "ServerLastStatusChange", serverID)
}

// ChangeServerStatus sets a server's status and records who and why (a server made active again
// is due at once, at now when set). It returns the status before; changed is false when the
// server already had that status (nothing written) and no registry sync had set it (a sync's
// delisting becomes the caller's, recorded). ErrNoServer: no such slug.
func ChangeServerStatus(ctx context.Context, db DBTX, slug, status, reason, actor string, now *time.Time) (from string, changed bool, err error) {
	c, err := optionalRow[statusChanged](ctx, db, "ChangeServerStatus", pgx.StrictNamedArgs{"slug": slug,
		"status": status, "reason": reason, "changed_by": actor, "now": now})
	if err != nil {
		return "", false, fmt.Errorf("change status of server %s: %w", slug, err)
	}
	if c == nil {
		return "", false, fmt.Errorf("server %s: %w", slug, ErrNoServer)
	}
	return c.StatusFrom, c.Changed, nil
}

// statusChanged is what ChangeServerStatus's statement returns.
type statusChanged struct {
	StatusFrom string `db:"status_from"`
	Changed    bool   `db:"changed"`
}

// optionalRow runs a named query that returns at most one row, collected by name; nil: no row.
func optionalRow[T any](ctx context.Context, db DBTX, name string, args ...any) (*T, error) {
	rows, err := db.Query(ctx, SQL(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &v, nil
}

// serverEndpoint is a server's id and endpoint URL.
type serverEndpoint struct {
	ID          int64  `db:"id"`
	EndpointURL string `db:"endpoint_url"`
}

// ServerEndpoints returns the endpoint URLs of the servers with those ids, by id.
func ServerEndpoints(ctx context.Context, db DBTX, ids []int64) (map[int64]string, error) {
	rows, err := db.Query(ctx, SQL("ServerEndpoints"), ids)
	if err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	endpoints, err := pgx.CollectRows(rows, pgx.RowToStructByName[serverEndpoint])
	if err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	out := make(map[int64]string, len(endpoints))
	for _, e := range endpoints {
		out[e.ID] = e.EndpointURL
	}
	return out, nil
}

// ServerRuns returns one server's runs newest first, as ListRuns does for a filter of the server
// alone (and Since, Limit), from the partitions of the jobs requested from keyFrom on (and the
// legacy and default ones); nil keyFrom: every partition.
func ServerRuns(ctx context.Context, db DBTX, serverID int64, keyFrom *time.Time, since *time.Time, limit int) ([]Run, error) {
	from := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	if keyFrom != nil {
		from = pgtype.Timestamptz{Time: *keyFrom, Valid: true}
	}
	out, err := collect[Run](ctx, db, "ServerRuns", pgx.StrictNamedArgs{"server_id": serverID, "key_from": from,
		"since": since, "limit": limit})
	if err != nil {
		return nil, fmt.Errorf("list the runs of server %d: %w", serverID, err)
	}
	return out, nil
}
