package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// Settings are the settings of a queued round: the active release's, checked as any round's
// (lease included), for a binary of version (another version's release starts nothing here),
// recording allowPrivate, the address policy of the worker process that starts it.
func Settings(ctx context.Context, db queries.DBTX, version, trigger string, allowPrivate bool) (probe.Settings, error) {
	flags := settings.Default()
	flags.Version, flags.Trigger, flags.AllowPrivateTargets = version, trigger, allowPrivate
	s, _, err := release.SettingsForRound(ctx, db, release.RoundRequest{BinaryVersion: version, Flags: flags})
	return s, err
}

// Enqueue records a round with settings s and inserts its invocations as River jobs, both in tx:
// the round and its work appear together or not at all. It returns the round's id.
func Enqueue(ctx context.Context, tx pgx.Tx, client *river.Client[pgx.Tx], s probe.Settings, keyID string) (int64, error) {
	q, err := enqueue(ctx, tx, client, s, keyID)
	return q.RoundID, err
}

func enqueue(ctx context.Context, tx pgx.Tx, client *river.Client[pgx.Tx], s probe.Settings, keyID string) (Queued, error) {
	id, startedAt, err := probe.StartRound(ctx, tx, s, keyID)
	if err != nil {
		return Queued{}, err
	}
	if _, err := client.InsertManyFastTx(ctx, tx, Invocations(id, startedAt, s)); err != nil {
		return Queued{}, fmt.Errorf("queue the invocations of round %d: %w", id, err)
	}
	return Queued{RoundID: id, StartedAt: startedAt, Settings: s, KeyID: keyID}, nil
}

// Queued is a round whose invocations wait for the workers.
type Queued struct {
	RoundID   int64
	StartedAt time.Time
	Settings  probe.Settings
	KeyID     string
}

// EnqueueRound is `run round --via-queue`: a round of settings s (made and checked by
// release.SettingsForRound) whose invocations the workers run, and sign, each with its own key
// (`run round --via-queue` gives keyID ""). It returns at once.
func EnqueueRound(ctx context.Context, pool *pgxpool.Pool, s probe.Settings, keyID string) (Queued, error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return Queued{}, fmt.Errorf("configure river: %w", err)
	}
	var q Queued
	err = queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		q, err = enqueue(ctx, tx, client, s, keyID)
		return err
	})
	return q, err
}

// WaitRound waits until the workers finished round id (a tick closes it once its invocations
// are all over), polling every second, and returns what it did.
func WaitRound(ctx context.Context, pool queries.DB, q Queued) (*probe.Summary, error) {
	for {
		at, err := queries.RoundFinishedAt(ctx, pool, q.RoundID)
		if err != nil {
			return nil, err
		}
		if at != nil {
			sum := &probe.Summary{RoundID: q.RoundID, Settings: q.Settings, SignedByWorkers: true, StartedAt: q.StartedAt,
				FinishedAt: *at, Invocations: q.Settings.Invocations()}
			sum.RoundCounts, err = queries.CountRound(ctx, pool, q.RoundID)
			return sum, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for round %d: %w", q.RoundID, context.Cause(ctx))
		case <-time.After(tickEvery):
		}
	}
}
