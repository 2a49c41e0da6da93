package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/internal/schema"
)

// maintainEvery is how often the worker makes the runs and jobs partitions ahead: daily, as
// `probectl maintain` from cron would (docs/retention.md); a week is made ahead each time, so
// missed days cost nothing.
const maintainEvery = 24 * time.Hour

// maintainArgs is the daily maintenance job: River's leader inserts it, one worker runs it.
type maintainArgs struct{}

func (maintainArgs) Kind() string { return "probectl_maintain" }

// maintainWorker makes the partitions a week ahead (schema.Maintain, idempotent) and applies the
// retention setting (retention.Auto).
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
	// The retention setting (`runs retention set --keep`): export into ArchiveDir, then prune.
	res, err := retention.Auto(ctx, w.cfg.Pool, time.Now(), w.cfg.ArchiveDir)
	if res.Export != nil {
		w.cfg.Log.Info("exported runs", "file", res.Export.FileName, "runs", res.Export.Runs, "sha256", res.Export.SHA256)
	}
	if len(res.Pruned) > 0 {
		w.cfg.Log.Info("pruned partitions of runs and jobs", "ranges", len(res.Pruned))
	}
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	return nil
}

// maintainJob is the daily maintenance, run at the worker's start too.
func maintainJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(maintainEvery),
		func() (river.JobArgs, *river.InsertOpts) { return maintainArgs{}, nil },
		&river.PeriodicJobOpts{ID: "probectl_maintain", RunOnStart: true})
}
