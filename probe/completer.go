package probe

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/probectl/probectl/queries"
)

// completerWorkers is how many batches of finishes may be committing at once. While they commit,
// the finishes that arrive queue for the next batch: the busier the round, the bigger its batches.
const completerWorkers = 2

// completer commits the finishes of a round's one-transaction mode (FinishTx) many per
// statement, as River's completer does: a finish waits for no timer, it joins the finishes
// already queued when a worker is free. A batch is one statement (queries.FinishBatch): each job
// advanced, recorded and closed as probe_finish would; a batch that fails stores nothing, and its
// finishes are made again one at a time by their callers (work), each saying why.
type completer struct {
	db     queries.DB
	budget time.Duration // one batch's timeout
	log    *slog.Logger
	in     chan finishRequest
	wg     sync.WaitGroup

	mu      sync.Mutex
	batches int            // batches sent
	failed  int            // batches that failed (their jobs finished alone)
	causes  map[string]int // why batches failed, by cause (at most maxBatchCauses)
}

// maxBatchCauses bounds the distinct causes a round keeps; more are counted under the last.
const maxBatchCauses = 8

// BatchFailures is what a round's batches of finishes did: how many were sent, how many failed
// (their jobs were then finished one at a time), and why, by cause.
type BatchFailures struct {
	Batches int
	Failed  int
	// Causes counts the failed batches by their error (at most maxBatchCauses distinct causes;
	// the rest under "other causes").
	Causes map[string]int
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
	c := &completer{db: b, budget: budget, log: log, in: make(chan finishRequest), causes: map[string]int{}}
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

// close stops the workers once every finish handed to them is answered, and says what its
// batches did.
func (c *completer) close() BatchFailures {
	close(c.in)
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return BatchFailures{Batches: c.batches, Failed: c.failed, Causes: c.causes}
}

// failedBatch records why a batch failed.
func (c *completer) failedBatch(err error) {
	cause := batchCause(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed++
	if _, ok := c.causes[cause]; !ok && len(c.causes) >= maxBatchCauses-1 {
		cause = "other causes"
	}
	c.causes[cause]++
}

// batchCause names a batch's failure without the job ids and counts that vary between batches:
// the database's error (its SQLSTATE and message) or the client's (a timeout, a broken connection).
func batchCause(err error) string {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Code + ": " + pgErr.Message
	case errors.Is(err, context.DeadlineExceeded):
		return "the batch outlived its write budget"
	case errors.Is(err, queries.ErrBatchShape):
		return queries.ErrBatchShape.Error()
	default:
		// The innermost error: the wrappers name the batch's size and jobs.
		for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
			err = u
		}
		return err.Error()
	}
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
		started := time.Now()
		res, err := queries.FinishBatch(ctx, c.db, ps)
		cancel()
		c.mu.Lock()
		c.batches++
		c.mu.Unlock()
		if err != nil {
			c.failedBatch(err)
			c.log.Warn("a batch of finishes failed; its jobs are finished one at a time", "jobs", len(batch),
				"took", time.Since(started).Round(time.Millisecond), "cause", batchCause(err), "err", err)
		}
		for i, req := range batch {
			if err != nil {
				req.reply <- finishReply{err: &batchError{err: err}}
				continue
			}
			req.reply <- finishReply{res: res[i].Result, err: res[i].Err}
		}
	}
}

// batchError: the job's batch failed as a whole; the job is finished alone.
type batchError struct{ err error }

func (e *batchError) Error() string { return "its batch failed: " + e.err.Error() }
func (e *batchError) Unwrap() error { return e.err }
