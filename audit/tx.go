package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// ErrNotReadOnly is returned by the Tx variants when the caller's transaction could write: an
// audit promises never to, and relies on the database to hold it to that.
var ErrNotReadOnly = errors.New("audit needs a READ ONLY transaction (begin it with queries.InReadOnlyTx)")

// ErrNotOneSnapshot is returned by the Tx variants when the caller's transaction is READ
// COMMITTED: an audit makes several reads whose figures must agree, so they must see one snapshot.
var ErrNotOneSnapshot = errors.New("audit needs a REPEATABLE READ transaction (begin it with queries.InReadOnlyTx)")

// inReadOnlyTx runs fn in a READ ONLY, REPEATABLE READ transaction that is always rolled back
// when fn fails, and committed (a no-op for a reader) when it succeeds.
func inReadOnlyTx(ctx context.Context, db queries.DB, fn func(pgx.Tx) error) error {
	err := queries.InReadOnlyTx(ctx, db, fn)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// enter starts every audit in tx: it checks that tx is READ ONLY and REPEATABLE READ (or
// SERIALIZABLE), then sets the planner settings the audits' scans rely on for the rest of tx
// (queries.AuditPlanSettings: custom plans only, so a connection that ran an audit five times
// does not switch to a plan that sorts the population).
func enter(ctx context.Context, tx pgx.Tx) error {
	mode, err := queries.AuditTxMode(ctx, tx)
	switch {
	case err != nil:
		return err
	case !mode.ReadOnly:
		return ErrNotReadOnly
	case !mode.OneSnapshot:
		return ErrNotOneSnapshot
	}
	return queries.AuditPlanSettings(ctx, tx)
}
