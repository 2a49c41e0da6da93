package directory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/queries"
)

// CollisionError is a registry name whose slug is another's: another registry name's server, a
// server added by hand, or the same name's server that another registry syncs. Two names never
// share one server, an import or sync never changes a server of another name, and a sync (or a
// file import) never changes a server another registry's sync owns: the whole import or sync is
// refused, naming both.
type CollisionError struct {
	Slug string
	Name string // the registry name being imported
	// Existing is the other registry name; nil: the server was added by hand (or before registry
	// names were recorded).
	Existing *string
	// ExistingWhere says where the other name was read in the same import or sync ("entry 3",
	// "page 2 entry 7"); empty when it is a server already in the directory.
	ExistingWhere string
	// Registry is the registry being synced ("" a file import); ExistingRegistry, when set, is
	// the other registry whose sync owns the server (the names are then the same).
	Registry         string
	ExistingRegistry *string
}

func (e *CollisionError) Error() string {
	switch {
	case e.ExistingRegistry != nil && e.Registry == "":
		return fmt.Sprintf("slug %q: registry name %q is synced from registry %s; refused: a file import never "+
			"changes a server a registry sync owns", e.Slug, e.Name, *e.ExistingRegistry)
	case e.ExistingRegistry != nil:
		return fmt.Sprintf("slug %q: registry name %q is synced from registry %s, not %s; refused: a sync never "+
			"changes a server another registry owns", e.Slug, e.Name, *e.ExistingRegistry, e.Registry)
	case e.Existing == nil:
		return fmt.Sprintf("slug %q: registry name %q maps to a server added by hand (not from the registry); "+
			"refused: an import never takes over a server of another name", e.Slug, e.Name)
	case e.ExistingWhere != "":
		return fmt.Sprintf("slug %q: registry name %q maps to the server of registry name %q (%s); "+
			"refused: two names never share one server", e.Slug, e.Name, *e.Existing, e.ExistingWhere)
	}
	return fmt.Sprintf("slug %q: registry name %q maps to the server of registry name %q; "+
		"refused: an import never takes over a server of another name", e.Slug, e.Name, *e.Existing)
}

// ExitCode: the import's input is at fault.
func (e *CollisionError) ExitCode() int { return exit.Usage }

// Change kinds a registry import or sync reports.
const (
	ChangeAdded      = "added"
	ChangeUpdated    = "updated"
	ChangeDeprecated = "deprecated"
	ChangeDelisted   = "delisted"
	ChangeRelisted   = "relisted"
)

// Reasons recorded with the status changes a sync makes (server_status_changes).
const (
	ReasonRegistryDeleted = "registry: deleted"
	ReasonRemoteRemoved   = "registry: remote removed"
	ReasonListedAgain     = "registry: listed again"
)

// RegistryChange is one server a registry import or sync changed.
type RegistryChange struct {
	Slug   string `json:"slug"`
	Name   string `json:"registry_name"`
	Change string `json:"change"` // added, updated, deprecated, delisted, relisted
	// From and To: an updated server's old and new URL (and transport), a status change's reason.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// registryApplier writes registry rows in one transaction and counts what changed.
type registryApplier struct {
	tx          pgx.Tx
	registryURL string // "" for a file import
	actor       string
	now         *time.Time
	changes     []RegistryChange
	added       int
	updated     int
	delisted    int
	unchanged   int
}

// upsert adds the row's server or updates the one its name owns; a slug another registry name (or
// a person) holds is a *CollisionError.
func (a *registryApplier) upsert(ctx context.Context, row RegistryRow) error {
	p := queries.RegistryServerParams{Slug: row.Slug, URL: row.URL, Transport: row.Transport, Name: row.Name,
		RegistryURL: a.registryURL, Plan: row.Plan, Deprecated: row.Deprecated, Now: a.now}
	p.CheckInterval, _ = PlanInterval(row.Plan)
	old, err := queries.RegistryServerBySlug(ctx, a.tx, row.Slug)
	if errors.Is(err, queries.ErrNoServer) {
		if _, err := queries.InsertRegistryServer(ctx, a.tx, p); err != nil {
			return err
		}
		a.added++
		a.note(row, ChangeAdded, "", row.URL)
		return nil
	}
	if err != nil {
		return err
	}
	if old.RegistryName == nil || *old.RegistryName != row.Name {
		return &CollisionError{Slug: row.Slug, Name: row.Name, Existing: old.RegistryName}
	}
	// The server is the registry's that synced it: a sync of another registry, or a file import,
	// never changes it (a sync may adopt a file import's server, which no registry owns).
	if old.RegistryURL != nil && *old.RegistryURL != a.registryURL {
		return &CollisionError{Slug: row.Slug, Name: row.Name, Existing: old.RegistryName,
			Registry: a.registryURL, ExistingRegistry: old.RegistryURL}
	}
	moved := old.EndpointURL != row.URL || old.Transport == nil || *old.Transport != row.Transport
	deprecated := row.Deprecated && !old.Deprecated
	sameRegistry := old.RegistryURL != nil && *old.RegistryURL == a.registryURL
	if moved || old.Deprecated != row.Deprecated || (a.registryURL != "" && !sameRegistry) {
		if err := queries.UpdateRegistryServer(ctx, a.tx, old.ID, p); err != nil {
			return err
		}
	}
	relist := old.RegistryDelisted && old.Status == "delisted"
	switch {
	case moved:
		a.updated++
		a.note(row, ChangeUpdated, describe(old.EndpointURL, old.Transport), describe(row.URL, &row.Transport))
	case deprecated:
		a.updated++
		a.note(row, ChangeDeprecated, "", "")
	case old.Deprecated != row.Deprecated:
		a.updated++
		a.note(row, ChangeUpdated, "deprecated", "active")
	case relist:
		a.updated++
	default:
		a.unchanged++
	}
	if relist {
		return a.relist(ctx, old, row)
	}
	return nil
}

// relist lists a server a sync had delisted again, now that its entry is listed again; a server an
// operator delisted stays delisted.
func (a *registryApplier) relist(ctx context.Context, old queries.RegistryServer, row RegistryRow) error {
	if _, err := SetStatus(ctx, a.tx, old.Slug, "active", ReasonListedAgain, a.actor, a.now); err != nil {
		return err
	}
	if err := queries.MarkRegistryDelisted(ctx, a.tx, old.ID, false, a.now); err != nil {
		return err
	}
	a.note(row, ChangeRelisted, "delisted", "active")
	return nil
}

// delist delists a server the registry removed, recording who and why as `servers delist` does.
// Only an active server: a paused one stays paused (an operator's pause is theirs; a sync that
// delisted it would list it again as active), a delisted one stays as it is.
func (a *registryApplier) delist(ctx context.Context, s queries.RegistryServer, reason string) error {
	if s.Status != "active" {
		return nil
	}
	if _, err := SetStatus(ctx, a.tx, s.Slug, "delisted", reason, a.actor, a.now); err != nil {
		return err
	}
	if err := queries.MarkRegistryDelisted(ctx, a.tx, s.ID, true, a.now); err != nil {
		return err
	}
	a.delisted++
	name := ""
	if s.RegistryName != nil {
		name = *s.RegistryName
	}
	a.changes = append(a.changes, RegistryChange{Slug: s.Slug, Name: name, Change: ChangeDelisted, From: s.Status, To: reason})
	return nil
}

func (a *registryApplier) note(row RegistryRow, change, from, to string) {
	a.changes = append(a.changes, RegistryChange{Slug: row.Slug, Name: row.Name, Change: change, From: from, To: to})
}

func describe(url string, transport *string) string {
	if transport == nil {
		return url
	}
	return url + " (" + *transport + ")"
}

// ImportRegistry upserts a registry file's rows in one transaction, recording each server's
// registry name: all land or none do. A row whose slug is another registry name's server, or a
// server added by hand, refuses the whole import with a *CollisionError. A dry run (dryRun) does
// the same and rolls it back.
func ImportRegistry(ctx context.Context, pool queries.DB, rows []RegistryRow, actor string, now *time.Time, dryRun bool) (ImportResult, error) {
	var res ImportResult
	err := inTxOrDryRun(ctx, pool, dryRun, func(tx pgx.Tx) error {
		if err := queries.LockRegistrySync(ctx, tx); err != nil {
			return err
		}
		a := &registryApplier{tx: tx, actor: actor, now: now}
		for _, row := range rows {
			if err := a.upsert(ctx, row); err != nil {
				return err
			}
		}
		res = ImportResult{Inserted: a.added, Updated: a.updated + a.unchanged}
		return nil
	})
	if err != nil {
		return ImportResult{}, fmt.Errorf("import servers: %w", err)
	}
	res.DryRun = dryRun
	return res, nil
}
