package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RegistryServer is a server as a registry sync sees it: what the registry decides, and whose
// registry name it is.
type RegistryServer struct {
	ID          int64   `db:"id"`
	Slug        string  `db:"slug"`
	EndpointURL string  `db:"endpoint_url"`
	Transport   *string `db:"transport"`
	Status      string  `db:"status"`
	// RegistryName is the registry name the server was imported from; nil: added by hand.
	RegistryName *string `db:"registry_name"`
	// RegistryURL is the registry a sync last read the server from; nil: a file import or by hand.
	RegistryURL *string `db:"registry_url"`
	Deprecated  bool    `db:"deprecated"`
	// RegistryDelisted: a sync delisted the server (not an operator).
	RegistryDelisted bool `db:"registry_delisted"`
}

// LockRegistrySync takes the transaction-level lock every registry sync and import holds.
func LockRegistrySync(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, SQL("LockRegistrySync")); err != nil {
		return fmt.Errorf("lock registry sync: %w", err)
	}
	return nil
}

// RegistryServerBySlug returns the server with that slug, locked; ErrNoServer when none has it.
func RegistryServerBySlug(ctx context.Context, tx pgx.Tx, slug string) (RegistryServer, error) {
	s, err := rowOf[RegistryServer](ctx, tx, "RegistryServerBySlug", pgx.NamedArgs{"slug": slug})
	if errors.Is(err, pgx.ErrNoRows) {
		return s, ErrNoServer
	}
	if err != nil {
		return s, fmt.Errorf("read server %s: %w", slug, err)
	}
	return s, nil
}

// RegistryServersByName returns the servers a registry name owns in registryURL's registry,
// locked.
func RegistryServersByName(ctx context.Context, tx pgx.Tx, registryURL, name string) ([]RegistryServer, error) {
	return collect[RegistryServer](ctx, tx, "RegistryServersByName", pgx.NamedArgs{"registry_url": registryURL, "name": name})
}

// RegistryListedServerCount returns how many servers registryURL's syncs own that are not
// delisted.
func RegistryListedServerCount(ctx context.Context, tx pgx.Tx, registryURL string) (int, error) {
	n, err := valueOf[int](ctx, tx, "RegistryListedServerCount", pgx.NamedArgs{"registry_url": registryURL})
	if err != nil {
		return 0, fmt.Errorf("count servers of registry %s: %w", registryURL, err)
	}
	return n, nil
}

// RegistryServersNotListed returns the servers last synced from registryURL, not delisted, whose
// registry names are not among names, locked.
func RegistryServersNotListed(ctx context.Context, tx pgx.Tx, registryURL string, names []string) ([]RegistryServer, error) {
	return collect[RegistryServer](ctx, tx, "RegistryServersNotListed",
		pgx.NamedArgs{"registry_url": registryURL, "names": names})
}

// RegistryServerParams are what a registry entry sets on a server.
type RegistryServerParams struct {
	Slug, URL, Transport, Name string
	// RegistryURL: the registry the sync reads; "" for a file import (an update keeps the one
	// recorded).
	RegistryURL   string
	Plan          string
	CheckInterval time.Duration
	Deprecated    bool
	Now           *time.Time
}

func (p RegistryServerParams) args() pgx.NamedArgs {
	return pgx.NamedArgs{"slug": p.Slug, "url": p.URL, "transport": p.Transport, "name": p.Name,
		"registry_url": nullIfEmpty(p.RegistryURL), "plan": p.Plan, "check_interval": p.CheckInterval,
		"deprecated": p.Deprecated, "now": p.Now}
}

// ErrSlugTaken says a slug was taken between the read and the write.
var ErrSlugTaken = errors.New("slug taken meanwhile")

// InsertRegistryServer adds a server from the registry; ErrSlugTaken when the slug was taken since
// it was read.
func InsertRegistryServer(ctx context.Context, tx pgx.Tx, p RegistryServerParams) (int64, error) {
	id, err := valueOf[int64](ctx, tx, "InsertRegistryServer", p.args())
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("insert server %s: %w", p.Slug, ErrSlugTaken)
	}
	if err != nil {
		return 0, fmt.Errorf("insert server %s: %w", p.Slug, err)
	}
	return id, nil
}

// ErrOtherName says an update found the server owned by another registry name (or none), or
// synced from another registry.
var ErrOtherName = errors.New("the server belongs to another registry name or registry")

// UpdateRegistryServer updates server id from its registry entry; ErrOtherName when the server is
// not p.Name's, or another registry's than p.RegistryURL (a file import: any registry's).
func UpdateRegistryServer(ctx context.Context, tx pgx.Tx, id int64, p RegistryServerParams) error {
	args := p.args()
	args["id"] = id
	_, err := valueOf[int64](ctx, tx, "UpdateRegistryServer", args)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("update server %s: %w", p.Slug, ErrOtherName)
	}
	if err != nil {
		return fmt.Errorf("update server %s: %w", p.Slug, err)
	}
	return nil
}

// MarkRegistryDelisted records that a sync delisted server id (delisted) or listed it again.
func MarkRegistryDelisted(ctx context.Context, tx pgx.Tx, id int64, delisted bool, now *time.Time) error {
	if _, err := tx.Exec(ctx, SQL("MarkRegistryDelisted"), pgx.NamedArgs{"id": id, "delisted": delisted, "now": now}); err != nil {
		return fmt.Errorf("mark server %d: %w", id, err)
	}
	return nil
}

// RegistrySyncClock returns now, or the database's clock when now is nil.
func RegistrySyncClock(ctx context.Context, db DBTX, now *time.Time) (time.Time, error) {
	t, err := valueOf[time.Time](ctx, db, "RegistrySyncClock", pgx.NamedArgs{"now": now})
	if err != nil {
		return t, fmt.Errorf("read the database's clock: %w", err)
	}
	return t, nil
}

// RegistrySync is one registry's sync state and schedule.
type RegistrySync struct {
	RegistryURL     string         `db:"registry_url"`
	NewestUpdatedAt *time.Time     `db:"newest_updated_at"`
	Every           *time.Duration `db:"every"`
	ScheduledBy     *string        `db:"scheduled_by"`
	ScheduledAt     *time.Time     `db:"scheduled_at"`
	StartedAt       *time.Time     `db:"started_at"`
	FinishedAt      *time.Time     `db:"finished_at"`
	FullSync        bool           `db:"full_sync"`
	Pages           int            `db:"pages"`
	Added           int            `db:"added"`
	Updated         int            `db:"updated"`
	Delisted        int            `db:"delisted"`
	Unchanged       int            `db:"unchanged"`
	Errors          int            `db:"errors"`
	LastError       *string        `db:"last_error"`
	LastErrorAt     *time.Time     `db:"last_error_at"`
}

// RegistrySyncs returns the sync state of registryURL ("" : of every registry).
func RegistrySyncs(ctx context.Context, db DBTX, registryURL string) ([]RegistrySync, error) {
	return collect[RegistrySync](ctx, db, "RegistrySyncState", pgx.NamedArgs{"registry_url": nullIfEmpty(registryURL)})
}

// RegistrySyncDone is what a sync that applied its changes records.
type RegistrySyncDone struct {
	RegistryURL                                string
	NewestUpdatedAt                            *time.Time
	StartedAt                                  time.Time
	Full                                       bool
	Pages, Added, Updated, Delisted, Unchanged int
	Now                                        *time.Time
}

// RecordRegistrySync records a sync that applied its changes, in its transaction.
func RecordRegistrySync(ctx context.Context, tx pgx.Tx, d RegistrySyncDone) error {
	_, err := tx.Exec(ctx, SQL("RecordRegistrySync"), pgx.NamedArgs{"registry_url": d.RegistryURL,
		"newest_updated_at": d.NewestUpdatedAt, "started_at": d.StartedAt, "full_sync": d.Full, "pages": d.Pages,
		"added": d.Added, "updated": d.Updated, "delisted": d.Delisted, "unchanged": d.Unchanged, "now": d.Now})
	if err != nil {
		return fmt.Errorf("record registry sync: %w", err)
	}
	return nil
}

// RecordRegistrySyncFailure records a sync that applied nothing, and why.
func RecordRegistrySyncFailure(ctx context.Context, db DBTX, registryURL string, startedAt time.Time, msg string, now *time.Time) error {
	_, err := db.Exec(ctx, SQL("RecordRegistrySyncFailure"), pgx.NamedArgs{"registry_url": registryURL,
		"started_at": startedAt, "last_error": msg, "now": now})
	if err != nil {
		return fmt.Errorf("record registry sync failure: %w", err)
	}
	return nil
}

// ScheduleRegistrySync records (every > 0) or removes (nil) the schedule of registryURL.
func ScheduleRegistrySync(ctx context.Context, db DBTX, registryURL string, every *time.Duration, by string, now *time.Time) error {
	_, err := db.Exec(ctx, SQL("ScheduleRegistrySync"), pgx.NamedArgs{"registry_url": registryURL,
		"every": every, "scheduled_by": by, "now": now})
	if err != nil {
		return fmt.Errorf("schedule registry sync: %w", err)
	}
	return nil
}

// DueRegistrySyncs returns the scheduled registries due for a sync.
func DueRegistrySyncs(ctx context.Context, db DBTX, now *time.Time) ([]string, error) {
	rows, err := db.Query(ctx, SQL("DueRegistrySyncs"), pgx.NamedArgs{"now": now})
	if err != nil {
		return nil, fmt.Errorf("due registry syncs: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("due registry syncs: %w", err)
	}
	return out, nil
}

// ClaimedRegistrySync is a scheduled registry a worker took to sync, and the start it recorded.
type ClaimedRegistrySync struct {
	RegistryURL string    `db:"registry_url"`
	StartedAt   time.Time `db:"started_at"`
}

// ClaimDueRegistrySync takes one due scheduled registry; ok is false when none is due.
func ClaimDueRegistrySync(ctx context.Context, db DBTX, now *time.Time) (ClaimedRegistrySync, bool, error) {
	c, err := rowOf[ClaimedRegistrySync](ctx, db, "ClaimDueRegistrySync", pgx.NamedArgs{"now": now})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("claim due registry sync: %w", err)
	}
	return c, true, nil
}
