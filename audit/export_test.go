package audit

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// WithTxHook returns p with fn set to run inside the audit's own transaction, after its reads, on
// the same connection: tests use it to try a write where the audit reads.
func WithTxHook(p DuplicatesParams, fn func(ctx context.Context, tx pgx.Tx) error) DuplicatesParams {
	p.inTx = fn
	return p
}
