package directory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/queries"
)

// SyncOptions is one sync of the directory from a registry's API.
type SyncOptions struct {
	// RegistryURL is the registry's base URL (GET {RegistryURL}/v0/servers).
	RegistryURL string
	// Full reads every entry; otherwise only those updated since the newest updatedAt the last
	// sync of this registry saw.
	Full bool
	// DryRun does everything but commit, and records nothing.
	DryRun bool
	// AllowPrivate lets the sync reach a registry on a loopback or private address.
	AllowPrivate bool
	// AllowMassDelist lets a sync delist more than the bound (MassDelistMin servers and
	// MassDelistPercent of the registry's): the operator checked that the registry really removed
	// them. It never lets an empty full listing delist everything.
	AllowMassDelist bool
	// Actor is who the status changes a sync makes are recorded as made by.
	Actor string
	// Now, when set, stands in for the clock.
	Now *time.Time

	// startedAt is the start a scheduled sync's claim recorded (nil: now).
	startedAt *time.Time
}

// MaxSyncDuration bounds the reading of one sync, all pages together: a registry that answers
// each page just inside its request timeout cannot hold a sync (or a worker's job) for hours.
const MaxSyncDuration = 30 * time.Minute

// A sync's bound on delisting: a registry that served a short listing (a bug, a partial outage
// answered with 200) must not delist the directory. A sync that would delist more than
// MassDelistMin servers and more than MassDelistPercent of the registry's servers not yet delisted
// is refused (unless AllowMassDelist), and so, always, is a full sync that reads no entry at all
// while the registry's syncs own servers.
const (
	MassDelistMin     = 10
	MassDelistPercent = 10
)

// MassDelistError is a sync refused because it would delist more than its bound (or everything,
// from an empty listing): nothing is applied and the refusal is recorded as the sync's error.
type MassDelistError struct {
	RegistryURL string
	// Delisting is how many servers the sync would delist, of Listed not delisted before it.
	Delisting, Listed int
	// Empty: a full listing with no entry at all.
	Empty bool
}

func (e *MassDelistError) Error() string {
	if e.Empty {
		return fmt.Sprintf("the full listing of %s has no entry while %d of its servers are listed: refused, nothing "+
			"delisted (a registry that serves nothing is taken as broken, not emptied)", e.RegistryURL, e.Listed)
	}
	return fmt.Sprintf("the sync would delist %d of the %d servers listed from %s, more than %d and more than %d%%: "+
		"refused, nothing applied (a short listing is more likely a registry fault than removals)",
		e.Delisting, e.Listed, e.RegistryURL, MassDelistMin, MassDelistPercent)
}

// ExitCode: what the registry served is the problem found.
func (e *MassDelistError) ExitCode() int { return exit.Found }

// tooManyDelisted says whether delisting n of listed servers passes a sync's bound.
func tooManyDelisted(n, listed int) bool {
	return n > MassDelistMin && n*100 > listed*MassDelistPercent
}

// SyncResult is what a sync did (or, dry, would do).
type SyncResult struct {
	RegistryURL string `json:"registry_url"`
	Full        bool   `json:"full"`
	// UpdatedSince is where an incremental sync started (nil: it read every entry).
	UpdatedSince *time.Time `json:"updated_since"`
	DryRun       bool       `json:"dry_run"`
	Pages        int        `json:"pages"`
	Entries      int        `json:"entries"`
	Added        int        `json:"added"`
	Updated      int        `json:"updated"`
	Delisted     int        `json:"delisted"`
	Unchanged    int        `json:"unchanged"`
	// Skipped counts the entries that give no server (deleted ones are delisted if they had one).
	Skipped         RegistrySkipped  `json:"skipped"`
	NewestUpdatedAt *time.Time       `json:"newest_updated_at"`
	Changes         []RegistryChange `json:"changes"`
}

// SyncError is a sync that applied nothing because of what the registry served (a bad entry, two
// names for one slug, a name that would take over another's server): a problem found.
type SyncError struct{ Err error }

func (e *SyncError) Error() string { return e.Err.Error() }

func (e *SyncError) Unwrap() error { return e.Err }

// ExitCode: the registry's content is at fault, not the user's input.
func (e *SyncError) ExitCode() int { return exit.Found }

// Sync mirrors a registry into the directory, in one transaction: every latest, active entry's
// remotes are added or updated as `servers import --format mcp-registry` does (same slug, same
// validation, same collision rule); a deleted entry's servers, and on a full sync those of names
// no longer listed, are delisted with the reason "registry: deleted"; a deprecated entry's are
// marked and kept; a server added by hand is never touched. A page the sync cannot use, or an
// entry it must refuse, ends it with nothing applied; the failure is recorded with the registry's
// sync state (not on a dry run, nor for bad input: a URL the guard refuses).
func Sync(ctx context.Context, pool queries.DB, o SyncOptions) (SyncResult, error) {
	base, err := RegistryBaseURL(o.RegistryURL)
	if err != nil {
		return SyncResult{}, err
	}
	res := SyncResult{RegistryURL: base, Full: o.Full, DryRun: o.DryRun}
	// The start is on the database's clock: the newest updatedAt stored is capped at it.
	var started time.Time
	if o.startedAt != nil {
		started = *o.startedAt
	} else if started, err = queries.RegistrySyncClock(ctx, pool, o.Now); err != nil {
		return res, err
	}
	if !o.Full {
		states, err := queries.RegistrySyncs(ctx, pool, base)
		if err != nil {
			return res, err
		}
		if len(states) == 1 {
			res.UpdatedSince = states[0].NewestUpdatedAt
		}
	}
	res.Full = res.UpdatedSince == nil
	fetchCtx, cancel := context.WithTimeout(ctx, MaxSyncDuration)
	entries, pages, err := fetchRegistry(fetchCtx, NewRegistryClient(o.AllowPrivate), base, res.UpdatedSince)
	cancel()
	res.Pages = pages
	if err == nil {
		res.Entries = len(entries)
		err = applySync(ctx, pool, o, entries, started, &res)
	}
	if err != nil {
		// Bad input at the command line (a registry URL the guard refuses before any request)
		// changes nothing, its sync state included; what the registry served, or failed to, is
		// recorded, and so is any failure of a scheduled sync, whose URL was taken when it was
		// scheduled (it may resolve to a refused address since): `servers sync --status` shows it.
		byHand := o.startedAt == nil
		if !o.DryRun && !errors.Is(err, context.Canceled) && !(byHand && exit.Code(err) == exit.Usage) {
			if rerr := queries.RecordRegistrySyncFailure(context.WithoutCancel(ctx), pool, base, started, err.Error(), o.Now); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return res, fmt.Errorf("sync %s: %w", base, err)
	}
	return res, nil
}

// syncName is what one registry name's latest entry says.
type syncName struct {
	name    string
	deleted bool
	rows    []RegistryRow
}

// planSync reads the entries: per name, the latest version (isLatest, or the only one), its rows,
// and whether it was deleted. Two names for one slug are refused naming both.
func planSync(entries []fetchedEntry, skipped *RegistrySkipped) ([]syncName, *time.Time, error) {
	var newest *time.Time
	latest := map[string]int{}
	var order []fetchedEntry
	for _, e := range entries {
		off := e.Meta.Official
		if off != nil && off.UpdatedAt != nil && (newest == nil || off.UpdatedAt.After(*newest)) {
			t := off.UpdatedAt.UTC()
			newest = &t
		}
		if off != nil && off.IsLatest != nil && !*off.IsLatest {
			skipped.OlderVersion++
			continue
		}
		name := strings.TrimSpace(e.Server.Name)
		if name == "" {
			return nil, nil, &EntryError{Index: e.Index, Name: e.Server.Name, Err: fmt.Errorf("%s: name: missing", e.where())}
		}
		if i, dup := latest[name]; dup {
			order[i] = e // a later page's copy is the newer one
			continue
		}
		latest[name] = len(order)
		order = append(order, e)
	}
	owners := slugOwners{}
	out := make([]syncName, 0, len(order))
	for _, e := range order {
		n := syncName{name: strings.TrimSpace(e.Server.Name)}
		if off := e.Meta.Official; off != nil && off.Status == "deleted" {
			skipped.Deleted++
			n.deleted = true
			out = append(out, n)
			continue
		}
		rows, err := registryRows(skipped, e.registryEntry)
		if err != nil {
			return nil, nil, fmt.Errorf("%s (%q): %w", e.where(), e.Server.Name, err)
		}
		for _, row := range rows {
			if err := owners.claim(row.Slug, n.name, e.where()); err != nil {
				return nil, nil, fmt.Errorf("%s (%q): %w", e.where(), e.Server.Name, err)
			}
		}
		n.rows = rows
		out = append(out, n)
	}
	return out, newest, nil
}

// applySync plans the entries and applies the plan in one transaction (rolled back on a dry run).
func applySync(ctx context.Context, pool queries.DB, o SyncOptions, entries []fetchedEntry, started time.Time, res *SyncResult) error {
	names, newest, err := planSync(entries, &res.Skipped)
	if err != nil {
		return &SyncError{Err: err}
	}
	// An entry dated after the sync started (a registry's clock or data wrong) is read again by
	// the next sync rather than moving its start past every real change.
	if newest != nil && newest.After(started) {
		capped := started.UTC()
		newest = &capped
	}
	res.NewestUpdatedAt = newest
	return inTxOrDryRun(ctx, pool, o.DryRun, func(tx pgx.Tx) error {
		if err := queries.LockRegistrySync(ctx, tx); err != nil {
			return err
		}
		listedBefore, err := queries.RegistryListedServerCount(ctx, tx, res.RegistryURL)
		if err != nil {
			return err
		}
		if res.Full && res.Entries == 0 && listedBefore > 0 {
			return &MassDelistError{RegistryURL: res.RegistryURL, Listed: listedBefore, Empty: true}
		}
		a := &registryApplier{tx: tx, registryURL: res.RegistryURL, actor: o.Actor, now: o.Now}
		listed := make([]string, 0, len(names))
		for _, n := range names {
			listed = append(listed, n.name)
			if err := a.applyName(ctx, n); err != nil {
				return err
			}
		}
		if res.Full {
			gone, err := queries.RegistryServersNotListed(ctx, tx, res.RegistryURL, listed)
			if err != nil {
				return err
			}
			for _, s := range gone {
				if err := a.delist(ctx, s, ReasonRegistryDeleted); err != nil {
					return err
				}
			}
		}
		if !o.AllowMassDelist && tooManyDelisted(a.delisted, listedBefore) {
			return &MassDelistError{RegistryURL: res.RegistryURL, Delisting: a.delisted, Listed: listedBefore}
		}
		res.Added, res.Updated, res.Delisted, res.Unchanged = a.added, a.updated, a.delisted, a.unchanged
		res.Changes = a.changes
		return queries.RecordRegistrySync(ctx, tx, queries.RegistrySyncDone{RegistryURL: res.RegistryURL,
			NewestUpdatedAt: newest, StartedAt: started, Full: res.Full, Pages: res.Pages, Added: a.added,
			Updated: a.updated, Delisted: a.delisted, Unchanged: a.unchanged, Now: o.Now})
	})
}

// applyName applies one name's latest entry: its rows upserted and its other servers (a remote it
// no longer has) delisted; or, deleted, all its servers delisted.
func (a *registryApplier) applyName(ctx context.Context, n syncName) error {
	keep := map[string]bool{}
	for _, row := range n.rows {
		var collision *CollisionError
		if err := a.upsert(ctx, row); errors.As(err, &collision) {
			return &SyncError{Err: err}
		} else if err != nil {
			return err
		}
		keep[row.Slug] = true
	}
	owned, err := queries.RegistryServersByName(ctx, a.tx, a.registryURL, n.name)
	if err != nil {
		return err
	}
	reason := ReasonRemoteRemoved
	if n.deleted {
		reason = ReasonRegistryDeleted
	}
	for _, s := range owned {
		if !keep[s.Slug] {
			if err := a.delist(ctx, s, reason); err != nil {
				return err
			}
		}
	}
	return nil
}
