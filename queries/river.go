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

// riverMigrationTime is when River applied one of its migrations.
type riverMigrationTime struct {
	Version   int64     `db:"version"`
	CreatedAt time.Time `db:"created_at"`
}

// riverStatus lists River's migrations, whether each is applied and, when River recorded it,
// when (River's migrator does not say; its table does).
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
	at := map[int64]time.Time{}
	if len(existing) > 0 {
		times, err := collect[riverMigrationTime](ctx, pool, "RiverMigrationTimes")
		if err != nil {
			return nil, fmt.Errorf("read when river's migrations were applied: %w", err)
		}
		for _, t := range times {
			at[t.Version] = t.CreatedAt
		}
	}
	all := m.AllVersions()
	out := make([]Migration, 0, len(all))
	for _, v := range all {
		mig := Migration{Version: int64(v.Version), Name: riverPrefix + v.Name, Applied: applied[v.Version]}
		if mig.Applied {
			mig.AppliedAt = at[mig.Version] // zero, shown as unknown, when River recorded none
		}
		out = append(out, mig)
	}
	return out, nil
}
