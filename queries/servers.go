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
	ID                  int64
	Slug                string
	EndpointURL         string
	Kind                string
	Plan                string
	CheckInterval       time.Duration
	Status              string
	MaintainerClaimedAt *time.Time
	NextCheckAt         time.Time
	CreatedAt           time.Time
	// Transport is an mcp server's transport (streamable-http or sse); nil for an http server.
	Transport *string
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
	err = db.QueryRow(ctx, SQL("UpsertServer"), p.Slug, p.EndpointURL, p.Kind, p.Plan,
		p.CheckInterval.Seconds(), p.Now, nullIfEmpty(p.Transport)).Scan(&id, &inserted)
	if err != nil {
		return 0, false, fmt.Errorf("upsert server %s: %w", p.Slug, err)
	}
	return id, inserted, nil
}

// ListServers returns the directory ordered by slug; status "" means every status.
func ListServers(ctx context.Context, db DBTX, status string) ([]Server, error) {
	var st *string
	if status != "" {
		st = &status
	}
	rows, err := db.Query(ctx, SQL("ListServers"), st)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanServer)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return out, nil
}

// ErrNoServer says no server has the slug asked for.
var ErrNoServer = errors.New("no such server")

// GetServerBySlug returns the server with that slug, or ErrNoServer.
func GetServerBySlug(ctx context.Context, db DBTX, slug string) (Server, error) {
	return oneServer(db.Query(ctx, SQL("GetServerBySlug"), slug))
}

// RecheckServer records a maintainer claim: the server becomes due at once (at now, when set).
func RecheckServer(ctx context.Context, db DBTX, slug string, now *time.Time) (Server, error) {
	return oneServer(db.Query(ctx, SQL("RecheckServer"), slug, now))
}

func oneServer(rows pgx.Rows, err error) (Server, error) {
	if err != nil {
		return Server{}, err
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanServer)
	if errors.Is(err, pgx.ErrNoRows) {
		return Server{}, ErrNoServer
	}
	return s, err
}

func scanServer(row pgx.CollectableRow) (Server, error) {
	var s Server
	var secs float64
	err := row.Scan(&s.ID, &s.Slug, &s.EndpointURL, &s.Kind, &s.Plan, &secs, &s.Status,
		&s.MaintainerClaimedAt, &s.NextCheckAt, &s.CreatedAt, &s.Transport)
	s.Transport = Transport(s.Kind, s.Transport)
	s.CheckInterval = time.Duration(secs * float64(time.Second))
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
