package queries

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/probectl/probectl/internal/exit"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one applied or pending schema step.
type Migration struct {
	Version   int64     `json:"version"`
	Name      string    `json:"name"`
	Applied   bool      `json:"applied"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
	Duration  float64   `json:"duration_seconds,omitempty"`
}

// SchemaBehindError says the database has not been migrated to what this binary needs.
type SchemaBehindError struct {
	Current, Target int64
}

func (e *SchemaBehindError) Error() string {
	return fmt.Sprintf("database schema is at version %d, this probectl needs %d; run `probectl migrate`",
		e.Current, e.Target)
}

func provider(pool *pgxpool.Pool) (*goose.Provider, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	// A session lock keeps two `probectl migrate` runs from applying the same step twice.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration, each in its own transaction, and returns those applied
// (none when the schema is current).
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	p, err := provider(pool)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	// A 00017 stopped half-way refuses new jobs from its cutoff day on (RedateStoppedPartitioning).
	if _, err := pool.Exec(ctx, SQL("RedateStoppedPartitioning")); err != nil {
		return nil, fmt.Errorf("re-date the stopped partitioning of 00017: %w", err)
	}
	results, err := p.Up(ctx)
	var partial *goose.PartialError
	if errors.As(err, &partial) {
		results = partial.Applied
	}
	out := make([]Migration, 0, len(results))
	for _, r := range results {
		out = append(out, Migration{Version: r.Source.Version, Name: path.Base(r.Source.Path),
			Applied: true, AppliedAt: time.Now().UTC(), Duration: r.Duration.Seconds()})
	}
	if err != nil {
		return out, fmt.Errorf("apply migrations: %w", err)
	}
	river, err := migrateRiver(ctx, pool)
	return append(out, river...), err
}

// MigrationStatus lists every migration this binary ships and whether it is applied.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	st, err := gooseStatus(ctx, pool)
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(st))
	for _, s := range st {
		m := Migration{Version: s.Source.Version, Name: path.Base(s.Source.Path), Applied: s.State == goose.StateApplied}
		if m.Applied {
			m.AppliedAt = s.AppliedAt.UTC()
		}
		out = append(out, m)
	}
	river, err := riverStatus(ctx, pool)
	return append(out, river...), err
}

// gooseStatus is the state of every migration probectl ships (River's aside).
func gooseStatus(ctx context.Context, pool *pgxpool.Pool) ([]*goose.MigrationStatus, error) {
	p, err := provider(pool)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("read migration status: %w", err)
	}
	return st, nil
}

// CheckSchema returns a *SchemaBehindError when migrations this binary ships are not applied.
// It only reads (goose's own check would create its version table), so it is safe for audits on a
// read-only role or a hot standby.
func CheckSchema(ctx context.Context, db DBTX) error {
	target, err := latestShipped()
	if err != nil {
		return err
	}
	exists, err := valueOf[bool](ctx, db, "SchemaVersionTableExists")
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	var current int64
	if exists {
		if current, err = valueOf[int64](ctx, db, "SchemaVersion"); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
	}
	if current < target {
		return &SchemaBehindError{Current: current, Target: target}
	}
	return nil
}

// latestShipped is the highest migration version embedded in this binary.
func latestShipped() (int64, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, n := range names {
		base := path.Base(n)
		digits := base[:strings.IndexFunc(base, func(r rune) bool { return r < '0' || r > '9' })]
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %s: bad version: %w", base, err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// ExitCode: a schema that is behind means the work could not be done.
func (e *SchemaBehindError) ExitCode() int { return exit.Unavailable }
