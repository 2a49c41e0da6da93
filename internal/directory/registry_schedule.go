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

// CheckSyncEvery judges a schedule's interval: 0 (no schedule) or MinSyncEvery to MaxSyncEvery.
func CheckSyncEvery(every time.Duration) error {
	if every != 0 && (every < MinSyncEvery || every > MaxSyncEvery) {
		return &SyncEveryError{Every: every}
	}
	return nil
}

// ScheduleSync records that `probectl worker`'s leader syncs registryURL every every (0: the
// schedule is removed; syncs then run only by hand). It returns the registry's base URL as stored.
func ScheduleSync(ctx context.Context, db queries.DBTX, registryURL string, every time.Duration, actor string, now *time.Time) (string, error) {
	base, err := RegistryBaseURL(registryURL)
	if err != nil {
		return "", err
	}
	if err := CheckSyncEvery(every); err != nil {
		return "", err
	}
	var e *time.Duration
	if every != 0 {
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

// HasDueSync says whether a scheduled registry is due for a sync (a cheap read: the worker's
// leader asks every minute before it inserts a sync job).
func HasDueSync(ctx context.Context, db queries.DBTX) (bool, error) {
	due, err := queries.DueRegistrySyncs(ctx, db, nil)
	return len(due) > 0, err
}

// SyncNextDue takes one scheduled registry that is due (none: ok false) and syncs it; the result
// or the failure is recorded with the registry (a failed sync is tried again when next due). The
// worker's leader runs it.
func SyncNextDue(ctx context.Context, pool queries.DB, allowPrivate bool, actor string) (res SyncResult, ok bool, err error) {
	c, ok, err := queries.ClaimDueRegistrySync(ctx, pool, nil)
	if err != nil || !ok {
		return res, false, err
	}
	res, err = Sync(ctx, pool, SyncOptions{RegistryURL: c.RegistryURL, AllowPrivate: allowPrivate, Actor: actor,
		startedAt: &c.StartedAt})
	return res, true, err
}
