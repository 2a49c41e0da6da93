// Package retention drops old runs and jobs a partition at a time, never a row at a time, and
// only once an export holds them (docs/retention.md). It is the domain side of `probectl runs
// prune`: the partitions are made by maintenance (internal/schema), the archives by
// internal/archive.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// MinAge: a prune never reaches into the last 2 days, where finishes, late runs and replayed
// spools still land.
const MinAge = 48 * time.Hour

// LockTimeout is the longest a detach or a drop waits for its lock in one try; a finish queued
// behind it waits no longer (the budget is 100 ms: docs/retention.md). A try that times out is
// retried after a pause that doubles from LockBackoff up to LockBackoffMax (so that the finishes
// queued behind a try get through, and a busy database is not hammered), at most LockTries
// times: about 12 s in all before the prune gives up with a *LockError.
const (
	LockTimeout    = 30 * time.Millisecond
	LockTries      = 30
	LockBackoff    = 20 * time.Millisecond
	LockBackoffMax = 400 * time.Millisecond
)

// LockError says a prune gave up waiting for a partition's lock (could not work: exit 3); what
// it dropped before stays dropped, and a later prune goes on from there.
type LockError struct {
	Table  string
	Tries  int
	Waited time.Duration
	Err    error
}

func (e *LockError) Error() string {
	return fmt.Sprintf("could not get the lock on %s after %d tries over %s (each waiting %s): "+
		"a long transaction or a vacuum holds it; check pg_stat_activity and pg_locks for sessions on %s, "+
		"then prune again (what was dropped stays dropped): %v",
		e.Table, e.Tries, render.Duration(e.Waited), render.Duration(LockTimeout), e.Table, e.Err)
}

func (e *LockError) Unwrap() error { return e.Err }

// RefusedError says why a prune was refused before anything changed (bad input: exit 2).
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Pruned is one range a prune dropped (or, in a dry run, would drop), or left for want of an
// export.
type Pruned struct {
	From      *time.Time `json:"from"` // nil: the legacy partition, from the first run
	To        time.Time  `json:"to"`
	JobsTable string     `json:"jobs_partition"`
	RunsTable string     `json:"runs_partition"`
	Runs      int64      `json:"runs"`
	ExportID  *int64     `json:"export_id"`
	// Kept: not dropped, because no recorded export covers it (and --without-export was not given),
	// or because, once detached, it held a run stored after the export (KeptWhy says so; the
	// detach was undone).
	Kept    bool   `json:"kept"`
	KeptWhy string `json:"kept_why,omitempty"`
}

// Request is one prune.
type Request struct {
	Before        time.Time
	Now           time.Time
	DryRun        bool
	WithoutExport bool
}

// Prune drops the partitions wholly before req.Before, oldest first: each runs partition, then
// its jobs partition, is detached and then dropped. A range that no recorded export covers is
// kept unless WithoutExport. It refuses a Before within MinAge of Now, or later than an open
// job's request (its partition would go with it).
func Prune(ctx context.Context, db queries.DB, req Request) ([]Pruned, error) {
	if req.Before.After(req.Now.Add(-MinAge)) {
		return nil, &RefusedError{Reason: fmt.Sprintf("%s is inside the last 2 days: runs still land there (finishes, late runs, replayed spools)",
			req.Before.UTC().Format(time.DateOnly))}
	}
	open, err := queries.OldestOpenJobBefore(ctx, db, req.Before)
	if err != nil {
		return nil, err
	}
	if open != nil {
		return nil, &RefusedError{Reason: fmt.Sprintf("%s is inside an open job's window: job %d of server %s, requested %s, is still open",
			req.Before.UTC().Format(time.DateOnly), open.JobID, open.Server, open.RequestedAt.UTC().Format(time.RFC3339))}
	}
	ranges, err := queries.PrunablePartitions(ctx, db, req.Before)
	if err != nil {
		return nil, err
	}
	out := make([]Pruned, 0, len(ranges))
	for _, r := range ranges {
		p := Pruned{From: r.RangeFrom, To: r.RangeTo, JobsTable: r.JobsTable, RunsTable: r.RunsTable, Runs: r.Runs,
			ExportID: r.ExportID, Kept: r.ExportID == nil && !req.WithoutExport}
		out = append(out, p)
		if p.Kept || req.DryRun {
			continue
		}
		if err := dropRange(ctx, db, p); err != nil {
			if errors.Is(err, queries.ErrRunAfterExport) {
				// Nothing of the range was detached: it stays, and a later export and prune take it.
				out[len(out)-1].Kept, out[len(out)-1].KeptWhy = true, err.Error()
				continue
			}
			return out, err
		}
	}
	return out, nil
}

// dropRange detaches the runs then the jobs partition, then drops them. The runs partition, once
// detached, is checked again against the export (a run stored in the range since the export was
// judged to cover it: queries.ErrRunAfterExport, and the detach is undone).
func dropRange(ctx context.Context, db queries.DB, p Pruned) error {
	for _, table := range []string{p.RunsTable, p.JobsTable} {
		if err := retryLock(ctx, table, func() error {
			_, err := queries.DetachPartition(ctx, db, table, LockTimeout, p.ExportID)
			return err
		}); err != nil {
			return err
		}
	}
	for _, table := range []string{p.RunsTable, p.JobsTable} {
		if err := retryLock(ctx, table, func() error {
			return queries.DropPartition(ctx, db, table, p.ExportID, LockTimeout)
		}); err != nil {
			return err
		}
	}
	return nil
}

// retryLock runs fn until it does not fail on its lock timeout, at most LockTries times, pausing
// between tries for a backoff that doubles from LockBackoff up to LockBackoffMax.
func retryLock(ctx context.Context, table string, fn func() error) error {
	start := time.Now()
	tries, err := queries.RetryLock(ctx, LockTries, LockBackoff, LockBackoffMax, fn)
	if queries.LockNotAvailable(err) {
		return &LockError{Table: table, Tries: tries, Waited: time.Since(start), Err: err}
	}
	return err
}

// WindowError says a read window reaches before the oldest kept partition (bad input: exit 2).
type WindowError struct {
	Since, OldestKept time.Time
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("the window from %s reaches before the oldest kept runs (%s): older runs were pruned; "+
		"their archives hold them ('probectl runs verify --archive')",
		e.Since.UTC().Format(time.RFC3339), e.OldestKept.UTC().Format(time.RFC3339))
}

// CheckWindow returns a *WindowError when since lies before the oldest kept partition, so that
// a reader (audit duplicates, deploy verify) refuses instead of answering from part of the runs.
func CheckWindow(ctx context.Context, db queries.DBTX, since time.Time) error {
	oldest, err := queries.OldestKept(ctx, db)
	if err != nil {
		return err
	}
	if oldest != nil && since.Before(*oldest) {
		return &WindowError{Since: since, OldestKept: *oldest}
	}
	return nil
}
