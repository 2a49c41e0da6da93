package probe

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/queries"
)

// beat writes the round's heartbeat every queries.RoundHeartbeatEvery (tests: heartbeatEvery)
// until the returned stop is called, so that a round whose process dies is seen as dead within
// queries.RoundDeadAfter. It beats on after the round's context is cancelled: the round still
// finishes the checks it holds. A beat that fails is logged and the next one tries again; it
// never stops the round (the jobs' leases, not the heartbeat, keep servers from being checked
// twice).
//
// When the round's database is a pool, the beats go through a pool of their own, of one
// connection made like the round's, opened at the first beat: the round's pool is small
// (RoundConns), and on a slow database its claims and a storm of finishes made one at a time
// (after their batches failed) could hold every connection of it for longer than a round may go
// without a beat, and the round would be taken for dead. A beat that fails there (its connection
// refused: max_connections, a role's limit, a pooler's cap) is made again through the round's
// pool.
func (r *Round) beat(ctx context.Context, roundID int64) (stop func()) {
	every := queries.RoundHeartbeatEvery
	if r.heartbeatEvery > 0 {
		every = r.heartbeatEvery
	}
	db, closeOwn := r.DB, func() {}
	if pool, ok := r.DB.(*pgxpool.Pool); ok {
		cfg := pool.Config()
		cfg.MaxConns, cfg.MinConns, cfg.MinIdleConns = 1, 0, 0
		if own, err := pgxpool.NewWithConfig(ctx, cfg); err == nil {
			db, closeOwn = own, own.Close
		}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			bctx, bcancel := context.WithTimeout(ctx, every)
			err := queries.RoundHeartbeat(bctx, db, roundID, nil)
			bcancel()
			if err != nil && db != r.DB && ctx.Err() == nil {
				// Its own connection could not be had or was lost: this beat goes through the
				// round's pool, behind its work, rather than not at all.
				bctx, bcancel = context.WithTimeout(ctx, every)
				if again := queries.RoundHeartbeat(bctx, r.DB, roundID, nil); again != nil {
					err = errors.Join(err, again)
				} else {
					err = nil
				}
				bcancel()
			}
			if err != nil && ctx.Err() == nil {
				r.Log.Warn("heartbeat failed; the next one tries again", "round", roundID, "err", err)
			}
		}
	})
	return sync.OnceFunc(func() { // stop may be called again: it stops once
		cancel()
		wg.Wait()
		closeOwn()
	})
}
