package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/queries"
)

type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
}

// factory hands commands their dependencies lazily: `--help`, `version` and a bad flag never
// connect to the database.
type factory struct {
	IO     *render.Streams
	Getenv func(string) string
	// Clock, when set (tests), fixes the time: relative flags ("24h" back from now) are read from
	// it and reports are read as of it. nil is the real time: this host's clock for the flags,
	// read before any connection is made, and the database's for the reports, the one claims,
	// staleness and retirements are judged by.
	Clock func() time.Time
	Build buildInfo

	// Global flags.
	DatabaseURL string
	Output      string
	NoColor     bool
	TZ          string

	// ReadDatabaseURL, when set (or PROBECTL_READ_DATABASE_URL), is where the commands that only
	// read connect: a hot standby.
	ReadDatabaseURL string

	mu       sync.Mutex
	pools    []*pgxpool.Pool
	readPool *pgxpool.Pool
}

func newFactory(io *render.Streams, getenv func(string) string, build buildInfo) *factory {
	return &factory{IO: io, Getenv: getenv, Build: build}
}

// Pool connects and checks that the schema is current: every command but `migrate` uses it.
func (f *factory) Pool(ctx context.Context) (*pgxpool.Pool, error) {
	return f.checkedPool(ctx, defaultConns)
}

// RoundPool is Pool for `run round`, whose pool holds probe.RoundConns connections: a round pays
// for every connection it opens (see probe.RoundConns).
func (f *factory) RoundPool(ctx context.Context) (*pgxpool.Pool, error) {
	return f.checkedPool(ctx, probe.RoundConns)
}

func (f *factory) checkedPool(ctx context.Context, conns int32) (*pgxpool.Pool, error) {
	pool, err := f.rawPool(ctx, conns)
	if err != nil {
		return nil, err
	}
	if err := queries.CheckSchema(ctx, pool); err != nil {
		return nil, err
	}
	return pool, nil
}

// defaultConns is the pool of every command but `run round`: a worker's invocations claim and
// finish concurrently beside River's own connections, and pgxpool's default (4 on this size of
// machine) would queue them behind each other. 25 stays far below max_connections.
const defaultConns = 25

// RawPool connects without looking at the schema (for `migrate`).
func (f *factory) RawPool(ctx context.Context) (*pgxpool.Pool, error) {
	return f.rawPool(ctx, defaultConns)
}

// rawPool opens the command's one pool, of conns connections, the first time it is asked for.
func (f *factory) rawPool(ctx context.Context, conns int32) (*pgxpool.Pool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pools) > 0 {
		return f.pools[0], nil
	}
	url, source := resolveURL(f.DatabaseURL, f.Getenv)
	pool, err := queries.Connect(ctx, url, source, queries.ConnectOptions{MaxConns: conns})
	if err != nil {
		return nil, err
	}
	f.pools = append(f.pools, pool)
	return pool, nil
}

// ReadPool is the pool of a command that only reads (status, serve, audit, runs list|show,
// servers list|show, deploy verify): on --read-database-url (else PROBECTL_READ_DATABASE_URL), a
// hot standby, when one is named; else the same pool as Pool. What runs on it never writes, takes
// no advisory lock and reads no UNLOGGED table, so a standby serves it.
func (f *factory) ReadPool(ctx context.Context) (*pgxpool.Pool, error) {
	url, source := resolveReadURL(f.ReadDatabaseURL, f.Getenv)
	if url == "" {
		return f.Pool(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readPool != nil {
		return f.readPool, nil
	}
	pool, err := queries.Connect(ctx, url, source, queries.ConnectOptions{MaxConns: 10, Read: true})
	if err != nil {
		return nil, err
	}
	if err := queries.CheckSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	f.readPool = pool
	return pool, nil
}

// Close closes what the factory opened.
func (f *factory) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pools {
		p.Close()
	}
	f.pools = nil
	if f.readPool != nil {
		f.readPool.Close()
		f.readPool = nil
	}
}

// OutputFormat checks -o against the formats a command supports, before anything connects; the
// command writes its result in that format with render.Output.
func (f *factory) OutputFormat(allowed ...string) (string, error) {
	format := f.Output
	if format == "" {
		format = render.FormatTable
	}
	if !slices.Contains(allowed, format) {
		return "", exit.UsageError(fmt.Errorf("--output %q: this command supports %s", format, strings.Join(allowed, ", ")))
	}
	return format, nil
}

// now is the time relative flags are read from: Clock's, else this host's.
func (f *factory) now() time.Time {
	if f.Clock != nil {
		return f.Clock()
	}
	return time.Now()
}

// readAt is the moment a report is read as of: nil (the database's clock) unless a test set Clock.
func (f *factory) readAt() *time.Time {
	if f.Clock == nil {
		return nil
	}
	at := f.Clock()
	return &at
}

// resolveZone sets the zone tables show times in from --tz, else PROBECTL_TZ, else UTC; a bad name
// is a usage error naming where it came from, before anything connects.
func (f *factory) resolveZone(cmd *cobra.Command) error {
	name, source := f.TZ, "--tz"
	if !cmd.Flags().Changed("tz") {
		name, source = f.Getenv("PROBECTL_TZ"), "PROBECTL_TZ"
	}
	loc, err := render.LoadZone(name)
	if err != nil {
		return exit.UsageError(fmt.Errorf("%s: %w", source, err))
	}
	f.IO.Zone = loc
	return nil
}
