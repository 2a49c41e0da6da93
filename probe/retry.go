package probe

import (
	"context"
	"log/slog"
	"time"

	"github.com/probectl/probectl/queries"
)

// retryFirstWait is the first wait before a failed write is tried again (queries.Retry's).
const retryFirstWait = queries.RetryFirstWait

// retry makes write until it succeeds, fails with an error that trying again cannot change, or
// ctx, the write's whole budget, ends; each attempt has at most each of it (queries.Retry). A run
// found stored by an earlier attempt is the write done, not a failure to try again.
func retry(ctx context.Context, each time.Duration, log *slog.Logger, what string, write func(ctx context.Context) error) error {
	return queries.Retry(ctx, each, log, what, write, errRunStored)
}

// pause waits d before a write is tried again, and says false when ctx, the write's budget, ends
// first: a retry then has no time left.
func pause(ctx context.Context, d time.Duration) bool { return queries.Pause(ctx, d) }
