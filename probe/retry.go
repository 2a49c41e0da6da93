package probe

import (
	"context"
	"log/slog"
	"time"

	"github.com/probectl/probectl/queries"
)

// retry makes write until it succeeds, fails with an error that trying again cannot change, or
// ctx, the write's whole budget, ends; each attempt has at most each of it (queries.Retry). A run
// found stored by an earlier attempt is the write done, not a failure to try again.
func retry(ctx context.Context, each time.Duration, log *slog.Logger, what string, write func(ctx context.Context) error) error {
	return queries.Retry(ctx, each, log, what, write, errRunStored)
}
