// Package schema brings a database to the schema this probectl ships and says where it stands:
// probectl's own migrations (goose, numbered files under queries/migrations, each in its own
// transaction, two concurrent runs taking turns on a session lock), then River's, with River's own
// migrator (River owns its tables; `probectl worker` needs them). It is the domain side of
// `probectl migrate`: the command parses, calls one function here and renders, as every other
// command does with its domain package; the SQL and the migration files stay in queries.
package schema

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/queries"
)

// Migrate applies every pending migration and returns those applied, probectl's first, then
// River's (named "river/…"); none when the schema is current. It connects without checking the
// schema first: it is what brings a schema that is behind up to date.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]queries.Migration, error) {
	return queries.Migrate(ctx, pool)
}

// Status lists every migration this binary ships, probectl's then River's, and whether the
// database has it, with when it was applied.
func Status(ctx context.Context, pool *pgxpool.Pool) ([]queries.Migration, error) {
	return queries.MigrationStatus(ctx, pool)
}

// Notices says what an operator should know before the pending migrations run (the history
// backfill of 00007 on a database with many runs, say); none when there is nothing to say.
func Notices(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	return queries.MigrationNotices(ctx, pool)
}

// Maintain makes the partitions of probe_jobs and probe_runs from from (today when zero) up to a
// week ahead, moving into them any rows a default partition holds for their days, and returns what
// it made (with dryRun, what it would make). It is idempotent: `probectl maintain`, `migrate` and
// the worker's daily job all call it (docs/retention.md).
func Maintain(ctx context.Context, db queries.DBTX, now, from time.Time, dryRun bool) ([]queries.Partition, error) {
	now = now.UTC()
	if from.IsZero() || from.After(now) {
		from = now
	}
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return queries.EnsurePartitions(ctx, db, from, day.Add(queries.PartitionsAhead+24*time.Hour), dryRun)
}
