package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is one row of the directory.
type Server struct {
	ID                  int64         `db:"id"`
	Slug                string        `db:"slug"`
	EndpointURL         string        `db:"endpoint_url"`
	Kind                string        `db:"kind"`
	Plan                string        `db:"plan"`
	CheckInterval       time.Duration `db:"check_interval"`
	Status              string        `db:"status"`
	MaintainerClaimedAt *time.Time    `db:"maintainer_claimed_at"`
	NextCheckAt         time.Time     `db:"next_check_at"`
	CreatedAt           time.Time     `db:"created_at"`
	// Transport is an mcp server's transport (streamable-http or sse); nil for an http server.
	Transport *string `db:"transport"`
}

// upserted is what UpsertServer returns.
type upserted struct {
	ID       int64 `db:"id"`
	Inserted bool  `db:"inserted"`
}

// UpsertServerParams are the fields an import or `servers add` sets.
type UpsertServerParams struct {
	Slug          string
	EndpointURL   string
	Kind          string
	Plan          string
	CheckInterval time.Duration
	// Transport: an mcp server's transport; "" stores none (http servers).
	Transport string
	// Now, when set, stands in for now() (tests fix the clock with it).
	Now *time.Time
}

// UpsertServer inserts a server or updates the one with the same slug, and says which it did.
func UpsertServer(ctx context.Context, db DBTX, p UpsertServerParams) (id int64, inserted bool, err error) {
	u, err := rowOf[upserted](ctx, db, "UpsertServer", pgx.StrictNamedArgs{"slug": p.Slug,
		"endpoint_url": p.EndpointURL, "kind": p.Kind, "plan": p.Plan, "check_interval": p.CheckInterval,
		"now": p.Now, "transport": nullIfEmpty(p.Transport)})
	if err != nil {
		return 0, false, fmt.Errorf("upsert server %s: %w", p.Slug, err)
	}
	return u.ID, u.Inserted, nil
}

// ListServers returns the directory ordered by slug; status "" means every status.
func ListServers(ctx context.Context, db DBTX, status string) ([]Server, error) {
	var st *string
	if status != "" {
		st = &status
	}
	out, err := rowsOf[Server](ctx, db, "ListServers", st, nil)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	for i := range out {
		out[i].Transport = Transport(out[i].Kind, out[i].Transport)
	}
	return out, nil
}

// ErrNoServer says no server has the slug asked for.
var ErrNoServer = errors.New("no such server")

// GetServerBySlug returns the server with that slug, or ErrNoServer.
func GetServerBySlug(ctx context.Context, db DBTX, slug string) (Server, error) {
	return oneServer(ctx, db, "ListServers", nil, slug)
}

// RecheckServer records a maintainer claim: the server becomes due at once (at now, when set).
func RecheckServer(ctx context.Context, db DBTX, slug string, now *time.Time) (Server, error) {
	return oneServer(ctx, db, "RecheckServer", slug, now)
}

func oneServer(ctx context.Context, db DBTX, name string, args ...any) (Server, error) {
	s, err := rowOf[Server](ctx, db, name, args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Server{}, ErrNoServer
	}
	s.Transport = Transport(s.Kind, s.Transport)
	return s, err
}

// Transport is the transport a server is checked over: its own, streamable-http for an mcp
// server stored without one (by a binary older than the column), nil for an http server.
func Transport(kind string, stored *string) *string {
	if kind != "mcp" {
		return nil
	}
	if stored == nil {
		def := "streamable-http"
		return &def
	}
	return stored
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
