package directory

import (
	"context"
	"errors"
	"fmt"
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

// Recheck records a maintainer claim on a server: it becomes due at once and its next job carries
// the reason maintainer_claim, which the spacing guard lets through.
func Recheck(ctx context.Context, pool queries.DB, slug string, now *time.Time) (queries.Server, error) {
	s, err := queries.RecheckServer(ctx, pool, slug, now)
	if errors.Is(err, queries.ErrNoServer) {
		return s, exit.UsageError(fmt.Errorf("server %q: %w", slug, ErrUnknownServer))
	}
	if err != nil {
		return s, fmt.Errorf("recheck %s: %w", slug, err)
	}
	return s, nil
}

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
