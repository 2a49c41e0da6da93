package directory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/queries"
)

// ImportResult counts what an import did.
type ImportResult struct {
	Inserted int `json:"inserted"`
	Updated  int `json:"updated"`
	// DryRun: nothing was written; the counts are what the import would have done.
	DryRun bool `json:"dry_run"`
}

// errDryRun ends a dry run's transaction: whatever it wrote is rolled back.
var errDryRun = errors.New("dry run: roll back")

// inTxOrDryRun runs fn in one transaction, and rolls it back when dryRun: a preview does exactly
// what the change does, so the two cannot disagree.
func inTxOrDryRun(ctx context.Context, pool queries.DB, dryRun bool, fn func(pgx.Tx) error) error {
	err := queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if dryRun && errors.Is(err, errDryRun) {
		return nil
	}
	return err
}

// Import upserts every row by slug in one transaction: all rows land or none do. A dry run
// (dryRun) does the same and rolls it back.
func Import(ctx context.Context, pool queries.DB, rows []Row, now *time.Time, dryRun bool) (ImportResult, error) {
	var res ImportResult
	err := inTxOrDryRun(ctx, pool, dryRun, func(tx pgx.Tx) error {
		res = ImportResult{}
		for _, row := range rows {
			interval, _ := PlanInterval(row.Plan)
			_, inserted, err := queries.UpsertServer(ctx, tx, queries.UpsertServerParams{
				Slug: row.Slug, EndpointURL: row.URL, Kind: row.Kind, Plan: row.Plan,
				CheckInterval: interval, Transport: row.Transport, Now: now,
			})
			if rowAtFault(err) {
				return &LineError{Line: row.Line, Err: err}
			}
			if err != nil {
				return err
			}
			if inserted {
				res.Inserted++
			} else {
				res.Updated++
			}
		}
		return nil
	})
	if err != nil {
		return ImportResult{}, fmt.Errorf("import servers: %w", err)
	}
	res.DryRun = dryRun
	return res, nil
}

// rowAtFault says whether PostgreSQL refused err because of the row's own values (SQLSTATE class
// 22, data exception, or 23, integrity constraint violation): bad input the user can fix in the
// file. Anything else (a missing table, a lost connection, a timeout) means the import could not
// be done, which is not the row's fault.
func rowAtFault(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")
}

// Add validates one entry and upserts it; a dry run (dryRun) does the same and rolls it back,
// returning the server as it would be.
func Add(ctx context.Context, pool queries.DB, e Entry, now *time.Time, dryRun bool) (queries.Server, bool, error) {
	if err := e.Validate(); err != nil {
		return queries.Server{}, false, &InvalidError{Err: err}
	}
	interval, _ := PlanInterval(e.Plan)
	var s queries.Server
	var inserted bool
	err := inTxOrDryRun(ctx, pool, dryRun, func(tx pgx.Tx) error {
		var err error
		_, inserted, err = queries.UpsertServer(ctx, tx, queries.UpsertServerParams{
			Slug: e.Slug, EndpointURL: e.URL, Kind: e.Kind, Plan: e.Plan, CheckInterval: interval,
			Transport: e.Transport, Now: now,
		})
		if err != nil {
			return err
		}
		s, err = queries.GetServerBySlug(ctx, tx, e.Slug)
		return err
	})
	if err != nil {
		return queries.Server{}, false, err
	}
	return s, inserted, nil
}

// InvalidError is an entry that failed validation: bad input.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }

func (e *InvalidError) Unwrap() error { return e.Err }

// ErrUnknownServer is returned for a slug that is not in the directory.
var ErrUnknownServer = errors.New("no server with that slug")

// MaxRecheck bounds the slugs one re-check names: a maintainer's list, not the directory (a
// round claims at most its capacity anyway).
const MaxRecheck = 1000

// Recheck records a maintainer claim on each server, in one transaction: each becomes due at once
// and its next job carries the reason maintainer_claim, which the spacing guard lets through. All
// or none: an unknown slug (every one is named) changes nothing and is bad input, as are no slugs
// and more than MaxRecheck. A slug named twice is re-checked once. The servers are written in slug
// order, as a status change writes them (eachNamed), and come back in the order first named.
func Recheck(ctx context.Context, pool queries.DB, slugs []string, now *time.Time) ([]queries.Server, error) {
	if err := CheckRecheck(slugs); err != nil {
		return nil, err
	}
	return eachNamed(ctx, pool, slugs, func(tx pgx.Tx, slug string) (queries.Server, bool, error) {
		s, err := queries.RecheckServer(ctx, tx, slug, now)
		if errors.Is(err, queries.ErrNoServer) {
			return s, false, nil
		}
		if err != nil {
			return s, true, fmt.Errorf("recheck %s: %w", slug, err)
		}
		return s, true, nil
	})
}

// eachNamed runs do for each server of slugs in one transaction, all or none: a slug named twice
// once, the servers in slug order (do writes each server's row, so two such changes that name the
// same servers in other orders never wait for each other in a cycle), the answers in the order
// first named. A server do does not find (found false) is unknown: every unknown slug is named, in
// an *UnknownServersError, and nothing changes.
func eachNamed[T any](ctx context.Context, pool queries.DB, slugs []string, do func(tx pgx.Tx, slug string) (T, bool, error)) ([]T, error) {
	named := uniqueSlugs(slugs)
	var out []T
	err := queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		done := make(map[string]T, len(named))
		for _, slug := range slices.Sorted(slices.Values(named)) {
			v, found, err := do(tx, slug)
			if err != nil {
				return err
			}
			if found {
				done[slug] = v
			}
		}
		out = out[:0]
		var unknown []string
		for _, slug := range named {
			v, ok := done[slug]
			if !ok {
				unknown = append(unknown, slug)
			}
			out = append(out, v)
		}
		if len(unknown) > 0 {
			return &UnknownServersError{Slugs: unknown, Asked: len(named)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// uniqueSlugs is slugs with each named once, in the order first named.
func uniqueSlugs(slugs []string) []string {
	seen := make(map[string]bool, len(slugs))
	out := make([]string, 0, len(slugs))
	for _, slug := range slugs {
		if !seen[slug] {
			seen[slug] = true
			out = append(out, slug)
		}
	}
	return out
}

// CheckRecheck refuses a re-check of no servers or of more than MaxRecheck (an *InvalidError). It
// needs no database, so a command calls it before it connects; Recheck calls it too.
func CheckRecheck(slugs []string) error {
	if len(slugs) == 0 {
		return &InvalidError{Err: errors.New("name at least one server to re-check")}
	}
	if len(slugs) > MaxRecheck {
		return &InvalidError{Err: fmt.Errorf("at most %d servers are re-checked at once, got %d", MaxRecheck, len(slugs))}
	}
	return nil
}

// UnknownServersError names every slug of a request that is not in the directory. It is bad
// input, and nothing of the request was changed. errors.Is finds ErrUnknownServer in it.
type UnknownServersError struct {
	Slugs []string
	// Asked is how many servers the request named: when more than Slugs, the others were known and
	// were left unchanged too.
	Asked int
}

func (e *UnknownServersError) Error() string {
	var msg string
	if len(e.Slugs) == 1 {
		msg = fmt.Sprintf("server %q: %s", e.Slugs[0], ErrUnknownServer)
	} else {
		quoted := make([]string, len(e.Slugs))
		for i, s := range e.Slugs {
			quoted[i] = fmt.Sprintf("%q", s)
		}
		msg = "no server with these slugs: " + strings.Join(quoted, ", ")
	}
	if e.Asked > len(e.Slugs) {
		msg += "; nothing was changed, not even the servers that exist"
	}
	return msg
}

func (e *UnknownServersError) Is(target error) bool { return target == ErrUnknownServer }

// ExitCode: an unknown slug is bad input.
func (e *UnknownServersError) ExitCode() int { return exit.Usage }

// CheckStatusFilter says whether status can filter a listing: empty (every server) or a status.
func CheckStatusFilter(status string) error {
	switch status {
	case "", "active", "paused", "delisted":
		return nil
	}
	return &InvalidError{Err: fmt.Errorf("status %q: must be active, paused or delisted", status)}
}

// List returns the directory, optionally only one status.
func List(ctx context.Context, pool queries.DB, status string) ([]queries.Server, error) {
	if err := CheckStatusFilter(status); err != nil {
		return nil, err
	}
	return queries.ListServers(ctx, pool, status)
}

// ExitCode: an invalid entry is bad input.
func (e *InvalidError) ExitCode() int { return exit.Usage }
