package probe

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// heldBatches is a pgx tracer that holds every batch of finishes (queries.FinishBatch) at its
// start until release is closed, and says on started when one began.
type heldBatches struct {
	started chan struct{}
	release chan struct{}
}

func (h *heldBatches) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if batchJobs(data) > 0 {
		h.started <- struct{}{}
		<-h.release
	}
	return ctx
}
func (h *heldBatches) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// batchJobs is how many jobs a statement finishes at once if it is queries.FinishBatch's, else 0.
func batchJobs(data pgx.TraceQueryStartData) int {
	if !strings.Contains(data.SQL, "probe_finish_many") {
		return 0
	}
	for _, a := range data.Args {
		if named, ok := a.(pgx.StrictNamedArgs); ok {
			ids, _ := named["job_ids"].([]int64)
			return len(ids)
		}
	}
	return 0
}

// claimOne claims one due server in a round of its own and returns the finish of its job.
func claimOne(t *testing.T, db queries.DB) (queries.ClaimedJob, queries.FinishParams) {
	t.Helper()
	dueServers(t, db, 1)
	round := testfactory.Round(t.Context(), t, db, nil)
	jobs, err := queries.Claim(t.Context(), db, queries.ClaimParams{RoundID: round, Limit: 1})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	j := jobs[0]
	now := time.Now().UTC()
	return j, queries.FinishParams{JobID: j.JobID, ServerID: j.ServerID, ClaimedNextCheckAt: j.ClaimedNextCheckAt,
		Outcome: "ok", StartedAt: now, CheckFinishedAt: now, Result: []byte(`{"outcome":"ok"}`), Kind: j.Kind,
		RequestedAt: &j.RequestedAt}
}

// A caller whose time ran out while its finish was in a batch gets the batch's answer, not its
// own timeout: the batch still commits, and a caller that had gone on to finish the job alone
// would have found it closed by the batch and logged a false "abandoned".
func TestACallerThatGaveUpOnABatchGetsTheBatchsCommit(t *testing.T) {
	t.Parallel()
	held := &heldBatches{started: make(chan struct{}, 1), release: make(chan struct{})}
	pool := migrated.Pool(t, dbtest.Tracer(held))
	_, p := claimOne(t, pool)
	c := newCompleter(pool, time.Minute, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	t.Cleanup(func() { c.close() })
	release := sync.OnceFunc(func() { close(held.release) })
	t.Cleanup(release) // runs first: a failed test must not leave the batch held

	ctx, giveUp := context.WithCancel(t.Context())
	type answer struct {
		res queries.FinishResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := c.finish(ctx, p)
		answered <- answer{res, err}
	}()
	<-held.started // the batch holds the finish
	giveUp()
	select {
	case a := <-answered:
		t.Fatalf("the caller gave up on a batch that had its finish: %+v", a)
	case <-time.After(200 * time.Millisecond): // it must not answer before the batch does
	}
	release()
	a := <-answered
	require.NoError(t, a.err)
	require.True(t, a.res.JobFinished, "the batch's commit is the caller's answer")
	var stored bool
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM probe_runs WHERE job_id = $1)", p.JobID).Scan(&stored))
	require.True(t, stored)
}

// syncBuffer is a log that tests read while rounds write it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A finish that finds its job closed asks what committed first: when an earlier attempt of the
// same finish stored the run (its answer lost, or come too late), the job was never abandoned and
// the log and the round's counts say so; a run stored late after a real abandonment still reads as
// one.
func TestAFinishThatFindsItsOwnEarlierCommitDoesNotReportAnAbandonedJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	log := &syncBuffer{}
	r := &Round{DB: pool, Log: slog.New(slog.NewTextHandler(log, nil))}

	job, p := claimOne(t, pool)
	first, err := queries.FinishTx(ctx, pool, p)
	require.NoError(t, err)
	require.True(t, first.JobFinished)
	again, err := queries.FinishTx(ctx, pool, p) // the same finish, once more: probe_finish's no-op
	require.NoError(t, err)
	require.False(t, again.JobFinished)
	st := &state{}
	r.reportGuards(ctx, st, job, again)
	require.Zero(t, st.closedElsewise, "not counted as closed elsewhere")
	require.NotContains(t, log.String(), "abandoned")
	require.Contains(t, log.String(), "the finish had committed before its answer came back")

	late, p := claimOne(t, pool)
	_, err = pool.Exec(ctx, "UPDATE probe_jobs SET finished_at = now(), outcome = 'abandoned' WHERE id = $1", late.JobID)
	require.NoError(t, err)
	fr, err := queries.FinishTx(ctx, pool, p)
	require.NoError(t, err)
	r.reportGuards(ctx, st, late, fr)
	require.Equal(t, 1, st.closedElsewise)
	require.Contains(t, log.String(), "job was already closed (abandoned after the in-flight window)")
}

// A retried finish that finds its run stored by an earlier attempt (a batch that committed but
// whose answer was lost) stops there: it is done, not failing, and must not hold its slot for the
// rest of the write budget trying again (seen under load: attempt 7 of a stored finish).
func TestARetriedFinishThatFindsItsRunStoredStopsAtOnce(t *testing.T) {
	t.Parallel()
	pool := testDB(t)
	r := &Round{DB: pool, Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	_, p := claimOne(t, pool)
	_, err := queries.FinishTx(t.Context(), pool, p) // the earlier attempt, its answer lost
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	attempts := 1 // the batch's
	var fr queries.FinishResult
	err = r.finishAlone(ctx, time.Second, &attempts, p, &fr)
	require.ErrorIs(t, err, errRunStored)
	require.Equal(t, 2, attempts, "one look at the database, no more attempts")
	require.NoError(t, ctx.Err(), "the budget was not spent")
}
