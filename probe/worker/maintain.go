package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/probectl/probectl/internal/schema"
)

// maintainEvery is how often the worker makes the runs and jobs partitions ahead: daily, as
// `probectl maintain` from cron would (docs/retention.md); a week is made ahead each time, so
// missed days cost nothing.
const maintainEvery = 24 * time.Hour

// maintainArgs is the daily maintenance job: River's leader inserts it, one worker runs it.
type maintainArgs struct{}

func (maintainArgs) Kind() string { return "probectl_maintain" }

// maintainWorker makes the partitions a week ahead (schema.Maintain, idempotent).
type maintainWorker struct {
	river.WorkerDefaults[maintainArgs]
	cfg Config
}

func (w *maintainWorker) Work(ctx context.Context, _ *river.Job[maintainArgs]) error {
	made, err := schema.Maintain(ctx, w.cfg.Pool, time.Now(), time.Time{}, false)
	if err != nil {
		return fmt.Errorf("maintain partitions: %w", err)
	}
	if len(made) > 0 {
		w.cfg.Log.Info("made partitions of runs and jobs ahead", "partitions", len(made))
	}
	return nil
}

// maintainJob is the daily maintenance, run at the worker's start too.
func maintainJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(maintainEvery),
		func() (river.JobArgs, *river.InsertOpts) { return maintainArgs{}, nil },
		&river.PeriodicJobOpts{ID: "probectl_maintain", RunOnStart: true})
}
