package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Partition is one partition of probe_jobs or probe_runs that maintenance made (or would make),
// with how many rows it moved there from the default partition.
type Partition struct {
	Parent    string    `db:"parent" json:"parent"`
	Table     string    `db:"table_name" json:"table"`
	RangeFrom time.Time `db:"range_from" json:"from"`
	RangeTo   time.Time `db:"range_to" json:"to"`
	MovedRows int64     `db:"moved_rows" json:"moved_rows"`
}

// PartitionsAhead is how far ahead maintenance makes partitions: a week, so that a missed daily
// run (or six) never sends a finish to the default partition.
const PartitionsAhead = 7 * 24 * time.Hour

// EnsurePartitions makes the partitions of every day (or week, by the retention setting) from
// from up to to that are missing; with dryRun it only says which. It is idempotent.
func EnsurePartitions(ctx context.Context, db DBTX, from, to time.Time, dryRun bool) ([]Partition, error) {
	rows, err := db.Query(ctx, SQL("EnsurePartitions"), from, to, nil, dryRun)
	if err != nil {
		return nil, fmt.Errorf("make partitions: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Partition])
	if err != nil {
		return nil, fmt.Errorf("make partitions: %w", err)
	}
	return out, nil
}
