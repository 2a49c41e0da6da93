package queries

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverPrefix marks River's migrations among probectl's in `migrate` and `migrate status`: River
// numbers its own from 1, so the name tells them apart.
const riverPrefix = "river/"

// riverMigrator migrates River's tables (river_job and the rest, for `probectl worker`) in the
// same database as probectl's, with River's own migrator: River owns its schema.
func riverMigrator(pool *pgxpool.Pool) (*rivermigrate.Migrator[pgx.Tx], error) {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("load river's migrations: %w", err)
	}
	return m, nil
}

// migrateRiver applies River's pending migrations and returns those applied.
func migrateRiver(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	m, err := riverMigrator(pool)
	if err != nil {
		return nil, err
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("apply river's migrations: %w", err)
	}
	out := make([]Migration, 0, len(res.Versions))
	for _, v := range res.Versions {
		out = append(out, Migration{Version: int64(v.Version), Name: riverPrefix + v.Name, Applied: true,
			AppliedAt: time.Now().UTC(), Duration: v.Duration.Seconds()})
	}
	return out, nil
}

// riverStatus lists River's migrations and whether each is applied.
func riverStatus(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	m, err := riverMigrator(pool)
	if err != nil {
		return nil, err
	}
	existing, err := m.ExistingVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("read river's migration status: %w", err)
	}
	applied := make(map[int]bool, len(existing))
	for _, e := range existing {
		applied[e.Version] = true
	}
	all := m.AllVersions()
	out := make([]Migration, 0, len(all))
	for _, v := range all {
		out = append(out, Migration{Version: int64(v.Version), Name: riverPrefix + v.Name, Applied: applied[v.Version]})
	}
	return out, nil
}
