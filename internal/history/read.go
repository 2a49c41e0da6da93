package history

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// beginner is a pool or a connection: something that starts transactions.
type beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// read runs fn in one read-only transaction with the audits' planner settings
// (queries.AuditPlanSettings): every statement planned with its parameters and without JIT. The
// history queries take optional filters as parameters; a generic plan, which a long-lived `serve`
// connection would switch to after five runs, cannot drop the filters left NULL, and JIT compiles
// for longer than these reads take (measured: 26 ms a page at 100,000 runs, about 1 ms without).
// Given a transaction already, fn runs in it, with the same settings.
func read(ctx context.Context, db queries.DBTX, fn func(queries.DBTX) error) error {
	if b, ok := db.(beginner); ok {
		return queries.InReadOnlyTx(ctx, b, func(tx pgx.Tx) error {
			if err := queries.AuditPlanSettings(ctx, tx); err != nil {
				return err
			}
			return fn(tx)
		})
	}
	if err := queries.AuditPlanSettings(ctx, db); err != nil {
		return err
	}
	return fn(db)
}
