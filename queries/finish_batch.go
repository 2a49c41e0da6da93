package queries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxFinishBatch bounds the finishes one FinishBatch stores together. A batch is one statement
// that must end inside one write's budget (probe's finishBudgets: 10 s by default) on a loaded
// machine. Measured (BenchmarkFinishBatchCap, the shared 2-core machine at load average 10-14):
// the longest batch of 500 took 0.41 s (0.57 ms a job), a twenty-fourth of the budget; the
// batch of 500 probe_finish statements it replaced took up to 4.4 s.
const MaxFinishBatch = 500

// BatchFinish is one job's answer from FinishBatch: its result, or why it was not finished there.
type BatchFinish struct {
	Result FinishResult
	// Err is ErrClaimGone when the job was not the claim it was said to be (nothing was written
	// for it; the rest of the batch was).
	Err error
}

// finishManyRow is what FinishMany returns, one row per job.
type finishManyRow struct {
	Ord         int        `db:"ord"`
	JobID       int64      `db:"job_id"`
	RunID       *int64     `db:"run_id"`
	Advanced    bool       `db:"advanced"`
	JobFinished bool       `db:"job_finished"`
	FinishedAt  *time.Time `db:"finished_at"`
}

// ErrBatchShape says a batch was not sent: FinishBatch takes jobs with their claim time, each once,
// and one time of finish (FinishParams.Now) for all.
var ErrBatchShape = errors.New("a batch finish takes each job once, with its claim time")

// FinishBatch finishes many jobs in one statement (probe_finish_many): the jobs are locked in id
// order, then the servers are advanced (the compare-and-set on the lease), the runs stored and
// the jobs still open closed, each job judged exactly as FinishTx judges it, its answer in
// out[i]. The statement is atomic: on an error nothing is stored, and the caller finishes the
// jobs one at a time (FinishTx), asking first whether a run was stored (GetReplayedJob), since a
// statement whose answer was lost may have stored them all. A job whose claim is gone (a
// failover) is answered ErrClaimGone alone; the others are stored.
func FinishBatch(ctx context.Context, db DBTX, ps []FinishParams) ([]BatchFinish, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	if len(ps) > MaxFinishBatch {
		return nil, fmt.Errorf("finish %d jobs at once: at most %d", len(ps), MaxFinishBatch)
	}
	var (
		jobs, servers                 = make([]int64, len(ps)), make([]int64, len(ps))
		requested, claimed            = make([]time.Time, len(ps)), make([]time.Time, len(ps))
		outcomes, errs                = make([]string, len(ps)), make([]string, len(ps))
		started, checked              = make([]time.Time, len(ps)), make([]time.Time, len(ps))
		requests                      = make([]int32, len(ps))
		results, envelopes            = make([]*string, len(ps)), make([]*string, len(ps))
		now                *time.Time = ps[0].Now
		seen                          = make(map[int64]bool, len(ps))
	)
	for i, p := range ps {
		if p.RequestedAt == nil || seen[p.JobID] || !sameTime(p.Now, now) {
			return nil, fmt.Errorf("finish %d jobs at once: job %d: %w", len(ps), p.JobID, ErrBatchShape)
		}
		seen[p.JobID] = true
		jobs[i], servers[i], requested[i], claimed[i] = p.JobID, p.ServerID, *p.RequestedAt, p.ClaimedNextCheckAt
		outcomes[i], errs[i], started[i], checked[i] = p.Outcome, p.Error, p.StartedAt, p.CheckFinishedAt
		requests[i] = int32(min(p.Requests, 1<<31-1))
		results[i], envelopes[i] = jsonText(p.Result), jsonText(p.Envelope)
	}
	rows, err := rowsOf[finishManyRow](ctx, db, "FinishMany", pgx.StrictNamedArgs{
		"job_ids": jobs, "server_ids": servers, "requested_ats": requested, "claimed": claimed,
		"outcomes": outcomes, "errors": errs, "started_ats": started, "check_finished_at": checked,
		"requests": requests, "results": results, "envelopes": envelopes, "now": now})
	if err == nil && len(rows) != len(ps) {
		err = fmt.Errorf("%d answers", len(rows))
	}
	if err != nil {
		return nil, fmt.Errorf("finish %d jobs in one statement: %w", len(ps), err)
	}
	out := make([]BatchFinish, len(ps))
	for _, row := range rows {
		i := row.Ord - 1
		if i < 0 || i >= len(ps) || row.JobID != ps[i].JobID {
			return nil, fmt.Errorf("finish %d jobs in one statement: answer %d names job %d", len(ps), row.Ord, row.JobID)
		}
		if row.RunID == nil {
			out[i].Err = fmt.Errorf("finish job %d: %w", row.JobID, ErrClaimGone)
			continue
		}
		out[i].Result = finishRow{RunID: *row.RunID, Advanced: row.Advanced, JobFinished: row.JobFinished,
			FinishedAt: row.FinishedAt}.result()
	}
	return out, nil
}

// sameTime: both nil, or the same time (a batch has one time of finish).
func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// jsonText sends nil as SQL NULL rather than JSON null, in an array.
func jsonText(raw []byte) *string {
	if raw == nil {
		return nil
	}
	s := string(raw)
	return &s
}
