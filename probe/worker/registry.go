package worker

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/probectl/probectl/internal/directory"
)

// registrySyncEvery is how often the leader asks whether a scheduled registry sync is due
// (`servers sync --every`, at least 5 minutes apart): a sync starts at most this late.
const registrySyncEvery = time.Minute

// registrySyncArgs is the periodic job that syncs one scheduled registry that is due.
type registrySyncArgs struct{}

func (registrySyncArgs) Kind() string { return "probectl_registry_sync" }

// registrySyncJob is the periodic job's constructor: a job only when a sync is due, so an idle
// leader inserts nothing (if the check fails the job is inserted anyway and says what failed).
func (p *process) registrySyncJob() (river.JobArgs, *river.InsertOpts) {
	ctx, cancel := context.WithTimeout(context.Background(), tickCheckTimeout)
	defer cancel()
	due, err := directory.HasDueSync(ctx, p.cfg.Pool)
	if err == nil && !due {
		return nil, nil
	}
	return registrySyncArgs{}, &river.InsertOpts{Queue: Queue, MaxAttempts: 1}
}

// registrySyncWorker runs the sync of one due registry; the next job takes the next one.
type registrySyncWorker struct {
	river.WorkerDefaults[registrySyncArgs]
	p *process
}

// Timeout: the sync's reading is bounded by directory.MaxSyncDuration; its one transaction gets
// five minutes more.
func (w *registrySyncWorker) Timeout(*river.Job[registrySyncArgs]) time.Duration {
	return directory.MaxSyncDuration + 5*time.Minute
}

// Work syncs one due registry. A failed sync is recorded with the registry (servers sync
// --status) and tried again when next due, so the job itself does not fail and is not retried.
func (w *registrySyncWorker) Work(ctx context.Context, _ *river.Job[registrySyncArgs]) error {
	cfg := w.p.cfg
	res, ok, err := directory.SyncNextDue(ctx, cfg.Pool, cfg.AllowPrivateTargets, "probectl worker "+w.p.id)
	switch {
	case err != nil && !ok:
		cfg.Log.Error("registry sync", "err", err)
		return err
	case err != nil:
		cfg.Log.Error("registry sync", "registry", res.RegistryURL, "err", err)
	case ok:
		cfg.Log.Info("registry synced", "registry", res.RegistryURL, "pages", res.Pages, "added", res.Added,
			"updated", res.Updated, "delisted", res.Delisted, "unchanged", res.Unchanged)
	}
	return nil
}
