package queries

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// MaxFinishBatch bounds the finishes one FinishTxBatch commits together.
const MaxFinishBatch = 500

// FinishTxBatch finishes many jobs in one transaction, one probe_finish each, sent together in one
// round trip: each job is advanced, recorded and closed as FinishTx would, and the commit is paid
// once for all of them. It is all or nothing: on an error nothing is stored, and the caller
// finishes the jobs one at a time (FinishTx), asking first whether a run was stored
// (GetReplayedJob: by job id, server and claim time), since a commit whose answer was lost may
// have stored them all.
func FinishTxBatch(ctx context.Context, db DB, ps []FinishParams) ([]FinishResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	if len(ps) > MaxFinishBatch {
		return nil, fmt.Errorf("finish %d jobs at once: at most %d", len(ps), MaxFinishBatch)
	}
	// Every run bumps a shared row of run_totals (kind, outcome, server id mod 16; see
	// probe_runs_rollup in migrations/00007_history.sql). Two batches that took those rows in
	// different orders would deadlock, so every batch takes them in one order: the finishes are
	// sent in that order, and their results put back in the caller's.
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		pa, pb := ps[a], ps[b]
		return cmp.Or(cmp.Compare(pa.Kind, pb.Kind), cmp.Compare(pa.Outcome, pb.Outcome),
			cmp.Compare(pa.ServerID%16, pb.ServerID%16), cmp.Compare(pa.JobID, pb.JobID))
	})
	out := make([]FinishResult, len(ps))
	err := InTx(ctx, db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, i := range order {
			b.Queue(SQL("FinishTx"), finishTxArgs(ps[i]))
		}
		br := tx.SendBatch(ctx, b)
		for _, i := range order {
			p := ps[i]
			rows, err := br.Query()
			if err != nil {
				_ = br.Close()
				return fmt.Errorf("finish job %d: %w", p.JobID, err)
			}
			row, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[finishRow])
			if errors.Is(err, pgx.ErrNoRows) {
				err = ErrClaimGone
			}
			if err != nil {
				_ = br.Close()
				return fmt.Errorf("finish job %d: %w", p.JobID, err)
			}
			out[i] = row.result()
		}
		return br.Close()
	})
	if err != nil {
		return nil, fmt.Errorf("finish %d jobs in one transaction: %w", len(ps), err)
	}
	return out, nil
}
