package probe

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/probectl/probectl/queries"
)

// completerWorkers is how many batches of finishes may be committing at once. While they commit,
// the finishes that arrive queue for the next batch: the busier the round, the bigger its batches.
const completerWorkers = 2

// completer commits the finishes of a round's one-transaction mode (FinishTx) many per
// transaction, as River's completer does: a finish waits for no timer, it joins the finishes
// already queued when a worker is free. Each job is still advanced, recorded and closed by its own
// probe_finish, atomically; a batch that fails stores nothing, and its finishes are made again one
// at a time by their callers (work).
type completer struct {
	db     queries.DB
	budget time.Duration // one batch's timeout
	log    *slog.Logger
	in     chan finishRequest
	wg     sync.WaitGroup
}

type finishRequest struct {
	p     queries.FinishParams
	reply chan finishReply // buffered: a worker never waits for its caller
}

type finishReply struct {
	res queries.FinishResult
	err error
}

// newCompleter starts a completer on db, or returns nil when db cannot begin a transaction (a
// round given a transaction of its own finishes one at a time).
func newCompleter(db queries.DBTX, budget time.Duration, log *slog.Logger) *completer {
	b, ok := db.(queries.DB)
	if !ok {
		return nil
	}
	c := &completer{db: b, budget: budget, log: log, in: make(chan finishRequest)}
	for range completerWorkers {
		c.wg.Go(c.run)
	}
	return c
}

// finish hands p to a batch and waits for the batch's commit. ctx bounds the hand-off only: once
// a batch holds p, its answer is awaited, which the batch's own timeout (budget) bounds. A caller
// that stopped listening would finish the job alone while the batch could still commit it, and
// its own finish, queued behind the batch's lock, would then find the job closed and log a false
// "abandoned". An error means the batch stored nothing that the caller can count on: it finishes
// p alone, asking first whether the run is stored (a commit whose answer was lost).
func (c *completer) finish(ctx context.Context, p queries.FinishParams) (queries.FinishResult, error) {
	req := finishRequest{p: p, reply: make(chan finishReply, 1)}
	select {
	case c.in <- req:
	case <-ctx.Done():
		return queries.FinishResult{}, ctx.Err()
	}
	r := <-req.reply
	return r.res, r.err
}

// close stops the workers once every finish handed to them is answered.
func (c *completer) close() {
	close(c.in)
	c.wg.Wait()
}

func (c *completer) run() {
	for first := range c.in {
		batch := []finishRequest{first}
	queued:
		for len(batch) < queries.MaxFinishBatch {
			select {
			case req, ok := <-c.in:
				if !ok {
					break queued
				}
				batch = append(batch, req)
			default:
				break queued
			}
		}
		ps := make([]queries.FinishParams, len(batch))
		for i, req := range batch {
			ps[i] = req.p
		}
		// Like every finish, the batch outlives a cancelled round: its checks were made.
		ctx, cancel := context.WithTimeout(context.Background(), c.budget)
		res, err := queries.FinishTxBatch(ctx, c.db, ps)
		cancel()
		if err != nil && len(batch) > 1 {
			c.log.Warn("a batch of finishes failed; its jobs are finished one at a time", "jobs", len(batch), "err", err)
		}
		for i, req := range batch {
			if err != nil {
				req.reply <- finishReply{err: err}
				continue
			}
			req.reply <- finishReply{res: res[i]}
		}
	}
}
