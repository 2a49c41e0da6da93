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

// checkQueueFlags refuses --wait without --via-queue, and --signing-key with it, before anything
// connects: a queued round is signed by the workers that run it, each with its own key, so a key
// given here would sign nothing (PROBECTL_SIGNING_KEY, set for other commands, is not read).
func (o *runRoundOptions) checkQueueFlags() error {
	if o.Wait && !o.ViaQueue {
		return exit.UsageError(errors.New("--wait: only with --via-queue (a round run here always waits)"))
	}
	if o.ViaQueue && o.SigningKey != "" {
		return exit.UsageError(errors.New("--signing-key: a round --via-queue is signed by the workers that run it, " +
			"each with its own key ('probectl worker --signing-key'); drop it"))
	}
	return nil
}

// runRoundViaQueue records the round and queues its invocations for `probectl worker`, prints
// the round's id and returns; with --wait it waits for the workers and prints the usual summary.
func runRoundViaQueue(ctx context.Context, opts *runRoundOptions, pool *pgxpool.Pool, s probe.Settings,
	overrides []release.Override, format string) error {
	f := opts.f
	q, err := worker.EnqueueRound(ctx, pool, s, "") // the workers sign, each with its own key
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
	return render.Output(f.IO.Out, format, render.View{JSON: queuedJSON{RoundID: q.RoundID, Invocations: s.Invocations()},
		Text: func() error {
			_, err := fmt.Fprintf(f.IO.Out, "%d\n", q.RoundID)
			return err
		}})
}
