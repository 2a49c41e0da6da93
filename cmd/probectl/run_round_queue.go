package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/worker"
	"github.com/probectl/probectl/release"
)

// queuedJSON is `run round --via-queue -o json` without --wait.
type queuedJSON struct {
	RoundID     int64 `json:"round_id"`
	Invocations int   `json:"invocations"`
}

// checkQueueFlags refuses --wait without --via-queue, before anything connects.
func (o *runRoundOptions) checkQueueFlags() error {
	if o.Wait && !o.ViaQueue {
		return exit.UsageError(errors.New("--wait: only with --via-queue (a round run here always waits)"))
	}
	return nil
}

// runRoundViaQueue records the round and queues its invocations for `probectl worker`, prints
// the round's id and returns; with --wait it waits for the workers and prints the usual summary.
func runRoundViaQueue(ctx context.Context, opts *runRoundOptions, pool *pgxpool.Pool, s probe.Settings,
	overrides []release.Override, signer probe.Signer, format string) error {
	f := opts.f
	keyID := ""
	if signer != nil {
		keyID = signer.KeyID()
	}
	q, err := worker.EnqueueRound(ctx, pool, s, keyID)
	if err != nil {
		return err
	}
	if opts.Wait {
		fmt.Fprintf(f.IO.ErrOut, "round %d queued: %d invocation(s); waiting for the workers\n", q.RoundID, s.Invocations())
		sum, err := worker.WaitRound(ctx, pool, q)
		if err != nil {
			return err
		}
		return renderRoundWithFailures(ctx, f, pool, format, sum, overrides, slog.New(slog.NewTextHandler(f.IO.ErrOut, nil)))
	}
	if format == "json" {
		return render.JSON(f.IO.Out, queuedJSON{RoundID: q.RoundID, Invocations: s.Invocations()})
	}
	_, err = fmt.Fprintf(f.IO.Out, "%d\n", q.RoundID)
	return err
}
