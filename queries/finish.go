package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// FinishParams describe a checked job: the claim it answers and the observation to store.
type FinishParams struct {
	JobID    int64
	ServerID int64
	// ClaimedNextCheckAt is the value the claim saw; the advance is a compare-and-set on it.
	ClaimedNextCheckAt time.Time
	Outcome            string // ok | failed | error
	Error              string
	StartedAt          time.Time // when the check started
	CheckFinishedAt    time.Time // when the check ended
	Requests           int
	Result             json.RawMessage
	// Envelope is the signed attestation; nil stores NULL (an unsigned run).
	Envelope json.RawMessage
	// Now, when set, stands in for the time of the finish.
	Now *time.Time
	// Kind is the server's check kind (mcp | http).
	Kind string
	// RequestedAt is when the job was claimed; with ServerID it tells the claim from another that
	// reuses its id after a failover (FinishTx). nil: checked by server only (FinishBatch needs it).
	RequestedAt *time.Time
}

// ErrClaimGone says a finish found no claim of its server at its time under its job id: the
// database lost the claim (an asynchronous failover), and may have given the id to another
// claim. Nothing was written; the result is the spool's to restore (probe's replay).
var ErrClaimGone = errors.New("the database no longer holds this claim (a failover lost it, or gave its id to another claim)")

// FinishResult says what a finish changed. A false Advanced or JobFinished is not an error but
// must be reported: the compare-and-set or the open-job guard found that something else had
// changed the row first.
type FinishResult struct {
	RunID int64
	// Advanced: next_check_at still held the claimed value (and the server was active) and was
	// moved on by the server's interval.
	Advanced bool
	// JobFinished: the job was still open and is now finished.
	JobFinished bool
	// FinishedAt is the time written on the job (zero when it was not finished here).
	FinishedAt time.Time
}

// finishRow is what FinishTx and FinishJob return.
type finishRow struct {
	RunID       int64      `db:"run_id"`
	Advanced    bool       `db:"advanced"`
	JobFinished bool       `db:"job_finished"`
	FinishedAt  *time.Time `db:"finished_at"`
}

func (f finishRow) result() FinishResult {
	r := FinishResult{RunID: f.RunID, Advanced: f.Advanced, JobFinished: f.JobFinished}
	if f.JobFinished && f.FinishedAt != nil {
		r.FinishedAt = *f.FinishedAt
	}
	return r
}

// FinishTx calls probe_finish: advance, run and job in one transaction.
func FinishTx(ctx context.Context, db DBTX, p FinishParams) (FinishResult, error) {
	f, err := rowOf[finishRow](ctx, db, "FinishTx", finishTxArgs(p))
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrClaimGone
	}
	if err != nil {
		return FinishResult{}, fmt.Errorf("finish job %d: %w", p.JobID, err)
	}
	return f.result(), nil
}

// AdvanceServer is the first write of a two-write finish: it moves the server's next_check_at on
// by its interval if it still holds claimed and the job was not closed as abandoned (a late
// finish never advances), and says whether it did.
func AdvanceServer(ctx context.Context, db DBTX, jobID, serverID int64, claimed time.Time, now *time.Time) (bool, error) {
	_, err := valueOf[time.Time](ctx, db, "AdvanceServer", pgx.StrictNamedArgs{"server_id": serverID,
		"claimed_next_check_at": claimed, "now": now, "job_id": jobID})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("advance next check of server %d: %w", serverID, err)
	}
	return true, nil
}

// FinishJob is the second write of a two-write finish: one statement that stores the run and
// finishes the job if it is still open. Advanced is left false: it is the caller's to fill in.
func FinishJob(ctx context.Context, db DBTX, p FinishParams) (FinishResult, error) {
	f, err := rowOf[finishRow](ctx, db, "FinishJob", finishJobArgs(p))
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrClaimGone
	}
	if err != nil {
		return FinishResult{}, fmt.Errorf("finish job %d: %w", p.JobID, err)
	}
	return f.result(), nil
}

// finishJobArgs are FinishJob's arguments: the job's claim and the run to store.
func finishJobArgs(p FinishParams) pgx.StrictNamedArgs {
	return pgx.StrictNamedArgs{"job_id": p.JobID, "server_id": p.ServerID, "requested_at": p.RequestedAt,
		"outcome": p.Outcome, "error": p.Error, "started_at": p.StartedAt,
		"check_finished_at": p.CheckFinishedAt, "requests": p.Requests, "result": jsonArg(p.Result),
		"envelope": jsonArg(p.Envelope), "now": p.Now}
}

// finishTxArgs are FinishTx's arguments: FinishJob's and the claimed value the advance compares.
func finishTxArgs(p FinishParams) pgx.StrictNamedArgs {
	args := finishJobArgs(p)
	args["claimed_next_check_at"] = p.ClaimedNextCheckAt
	return args
}

// jsonArg sends nil as SQL NULL rather than JSON null.
func jsonArg(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}

// RunLate says whether the job's run was stored late, after the job had been closed as abandoned.
func RunLate(ctx context.Context, db DBTX, jobID int64) (bool, error) {
	late, err := valueOf[bool](ctx, db, "RunLate", jobID)
	if err != nil {
		return false, fmt.Errorf("read the run of job %d: %w", jobID, err)
	}
	return late, nil
}
