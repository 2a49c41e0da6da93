package directory

import (
	"context"
	"fmt"
	"time"

	"github.com/probectl/probectl/queries"
)

// The bounds of a sync schedule: often enough to follow the registry within minutes, never so
// often that a mirror hammers it.
const (
	MinSyncEvery = 5 * time.Minute
	MaxSyncEvery = 7 * 24 * time.Hour
)

// SyncEveryError is a schedule interval out of bounds: bad input, the command names its flag.
type SyncEveryError struct{ Every time.Duration }

func (e *SyncEveryError) Error() string {
	return fmt.Sprintf("must be %s to %s (0 removes the schedule), got %s", MinSyncEvery, MaxSyncEvery, e.Every)
}

// ScheduleSync records that `probectl worker`'s leader syncs registryURL every every (0: the
// schedule is removed; syncs then run only by hand). It returns the registry's base URL as stored.
func ScheduleSync(ctx context.Context, db queries.DBTX, registryURL string, every time.Duration, actor string, now *time.Time) (string, error) {
	base, err := RegistryBaseURL(registryURL)
	if err != nil {
		return "", err
	}
	var e *time.Duration
	if every != 0 {
		if every < MinSyncEvery || every > MaxSyncEvery {
			return "", &SyncEveryError{Every: every}
		}
		e = &every
	}
	if err := queries.ScheduleRegistrySync(ctx, db, base, e, actor, now); err != nil {
		return "", err
	}
	return base, nil
}

// SyncStatus is the last sync of each registry ("" ) or of registryURL, and its schedule.
func SyncStatus(ctx context.Context, db queries.DBTX, registryURL string) ([]queries.RegistrySync, error) {
	if registryURL != "" {
		base, err := RegistryBaseURL(registryURL)
		if err != nil {
			return nil, err
		}
		registryURL = base
	}
	return queries.RegistrySyncs(ctx, db, registryURL)
}

// SyncDue runs the sync of every scheduled registry that is due, one after the other, and returns
// each one's result or error (a failed sync is recorded with its registry and tried again when
// next due). The worker's leader calls it.
func SyncDue(ctx context.Context, pool queries.DB, allowPrivate bool, actor string) ([]SyncResult, []error, error) {
	due, err := queries.DueRegistrySyncs(ctx, pool, nil)
	if err != nil {
		return nil, nil, err
	}
	var results []SyncResult
	var errs []error
	for _, url := range due {
		res, err := Sync(ctx, pool, SyncOptions{RegistryURL: url, AllowPrivate: allowPrivate, Actor: actor})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results = append(results, res)
	}
	return results, errs, nil
}
