package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
)

// historyMigration fills the history rollup from every stored run inside its own transaction,
// after creating the trigger that keeps it: while it runs, every insert into probe_runs (every
// finish) waits. It has shipped, so it cannot change; what a later binary can do is say so before
// applying it.
const historyMigration = 7

// HistoryBackfillPerMillionRuns is how long migration 00007 took per million stored runs in
// BenchmarkServerViews at 5,000,000 runs on a busy 2-core machine (docs/history.md; idle, it took
// about 25 s): an upper guide, not a promise.
const HistoryBackfillPerMillionRuns = 3 * time.Minute

// NoticeRuns is the number of stored runs from which `probectl migrate` warns before applying
// 00007.
const NoticeRuns = 10_000

// MigrationNotices returns what an operator should know before the pending migrations are applied:
// today, that 00007 on a database with many runs makes finishes wait for about how long. None when
// nothing pending is slow.
func MigrationNotices(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	st, err := gooseStatus(ctx, pool)
	if err != nil {
		return nil, err
	}
	pending := false
	for _, m := range st {
		pending = pending || (m.Source.Version == historyMigration && m.State != goose.StateApplied)
	}
	if !pending {
		return nil, nil
	}
	rows, err := pool.Query(ctx, SQL("StoredRunsEstimate"))
	if err != nil {
		return nil, fmt.Errorf("count stored runs: %w", err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[struct {
		Runs int64 `db:"runs"`
	}])
	if err != nil {
		return nil, fmt.Errorf("count stored runs: %w", err)
	}
	if n.Runs < NoticeRuns {
		return nil, nil
	}
	took := time.Duration(float64(HistoryBackfillPerMillionRuns) * float64(n.Runs) / 1e6).Round(time.Second)
	return []string{fmt.Sprintf("migration 00007 fills the history rollup from about %d runs (up to about %s on a busy "+
		"small machine, %s per million runs; an idle one took about a seventh of that), and finishes wait until it commits: stop `run round` and `probectl worker` "+
		"before migrating (docs/history.md, \"Upgrading across 00007\")", n.Runs, took, HistoryBackfillPerMillionRuns)}, nil
}
