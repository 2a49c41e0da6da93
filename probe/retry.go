package probe

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/probectl/probectl/queries"
)

// The backoff between two attempts of a write: it doubles from retryFirstWait up to retryMaxWait.
// A restart of PostgreSQL takes about a second; a failover tens of seconds, and the finish's
// budget (finishTimeout) bounds how long we wait for one.
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 2 * time.Second
)

// retry makes write until it succeeds, fails with an error that trying again cannot change, or
// ctx, the write's whole budget, ends; each attempt has at most each of it. It returns the last
// error. An attempt after a failure runs on a fresh connection: the pool destroys a connection
// that broke, and pings one that sat idle for more than a second before it lends it.
func retry(ctx context.Context, each time.Duration, log *slog.Logger, what string, write func(ctx context.Context) error) error {
	wait := retryFirstWait
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, each)
		err := write(actx)
		cancel()
		// A run found stored by an earlier attempt is the write done, not a failure to try again.
		if err == nil || errors.Is(err, errRunStored) || !queries.Transient(err) || ctx.Err() != nil {
			return err
		}
		log.Warn("write failed; trying again on a fresh connection", "write", what, "attempt", attempt,
			"retry_in", wait, "err", err)
		if !pause(ctx, wait) {
			return err
		}
		wait = min(2*wait, retryMaxWait)
	}
}

// pause waits d before a write is tried again, and says false when ctx, the write's budget, ends
// first: a retry then has no time left.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
