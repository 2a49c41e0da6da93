package probe

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// work checks one claimed server, calls checked once the check has ended, signs the observation
// and finishes the job. Whatever happens,
// the job ends with exactly one run or stays visibly open (a finish that failed), and the round
// hears about the latter. It returns the check's outcome, for the round's progress.
func (r *Round) work(ctx context.Context, st *state, inv int, job queries.ClaimedJob, l lease, checked func()) (outcome string) {
	res := r.check(ctx, job, l)
	checked() // the check's slot is free: nothing more is sent to the server
	outcome = res.Outcome
	if res.Fault == check.FaultProbectl && res.Summary == fencedSummary {
		st.mu.Lock()
		st.fenced++
		st.mu.Unlock()
		st.problem("job %d (%s): %s", job.JobID, job.Slug, res.Error)
		r.Log.Warn("check fenced: the job's lease ended before or during the check; no request was sent after it",
			"job", job.JobID, "server", job.Slug)
	} else if res.Fault == check.FaultProbectl {
		// Not a lease's end (the process had no decode slot free in time): a problem of this
		// prober, stored as such, and not counted as fenced.
		st.problem("job %d (%s): %s", job.JobID, job.Slug, res.Error)
		r.Log.Warn("check not made by probectl's fault", "job", job.JobID, "server", job.Slug, "error", res.Error)
	} else if ctx.Err() != nil && res.Outcome != check.OutcomeOK {
		// The round was stopped (Ctrl-C) while this check ran, or before it began: whatever went
		// wrong says nothing about the server. The run is still stored (requests may have been
		// sent), saying so.
		res = interrupted(res, context.Cause(ctx))
		st.mu.Lock()
		st.interrupted++
		st.mu.Unlock()
	}

	// The writes outlive a cancelled round: the check was made, so it is recorded. The tools go
	// first: what the server's day had no room for is said in the run, which is then signed.
	all, each := r.finishBudgets()
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), all)
	defer wcancel()
	res.ToolDefinitionsCut += r.storeTools(wctx, each, st, job, res)

	var envelope json.RawMessage
	if r.Signer != nil {
		env, err := r.Signer.Sign(attest.Run{JobID: job.JobID, ServerID: job.ServerID, Slug: job.Slug,
			URL: job.URL, Kind: job.Kind, RoundID: st.roundID, Invocation: inv, Result: res})
		if err != nil {
			// The run is still stored, unsigned: a missing envelope shows in deploy verify.
			st.problem("job %d (%s): %v", job.JobID, job.Slug, err)
			r.Log.Error("signing failed; the run is stored without an envelope", "job", job.JobID, "server", job.Slug, "err", err)
		} else {
			envelope = env
		}
	}
	result, err := json.Marshal(res)
	if err != nil {
		st.problem("job %d (%s): encode result: %v; the job stays open", job.JobID, job.Slug, err)
		return
	}
	p := queries.FinishParams{JobID: job.JobID, ServerID: job.ServerID, ClaimedNextCheckAt: job.ClaimedNextCheckAt,
		Outcome: res.Outcome, Error: res.Error, StartedAt: res.StartedAt, CheckFinishedAt: res.FinishedAt,
		Requests: len(res.Requests), Result: result, Envelope: envelope, Kind: job.Kind, RequestedAt: &job.RequestedAt}

	var fr queries.FinishResult
	if r.Settings.Finish == FinishAdvanceFirst {
		fr, err = r.finishAdvanceFirst(wctx, each, st, job, p)
		if errors.Is(err, errAdvanceFailed) {
			// Finished, not advanced, and already reported: not a compare-and-set miss.
			return
		}
	} else {
		attempts := 0
		if st.completer != nil {
			// Committed with the other finishes queued meanwhile; if the batch fails, this job is
			// finished alone below, as a second attempt (which asks first whether it is stored).
			r.hooks.before(wctx, writeFinishTx)
			bctx, bcancel := context.WithTimeout(wctx, each)
			fr, err = st.completer.finish(bctx, p)
			bcancel()
			attempts = 1
		}
		if st.completer != nil && err != nil {
			// Every fallback says why: its batch failed (the batch's own warning gave the cause
			// once for all its jobs), or the batch answered this job with an error of its own.
			var be *batchError
			if errors.As(err, &be) {
				r.Log.Info("finishing the job alone: its batch failed", "job", job.JobID, "server", job.Slug, "cause", err)
			} else {
				r.Log.Warn("finishing the job alone", "job", job.JobID, "server", job.Slug, "cause", err)
			}
		}
		if st.completer == nil || err != nil {
			err = r.finishAlone(wctx, each, &attempts, p, &fr)
		}
	}
	if queries.RunAlreadyStored(err) || errors.Is(err, errRunStored) {
		// An attempt committed but its answer was lost with the connection: stored once.
		r.Log.Info("the finish had committed before its connection broke; the run is stored once", "job", job.JobID, "server", job.Slug)
		r.journalResult(st, job, p)
		return
	}
	if err != nil {
		r.spoolResult(st, inv, job, p, err)
		return
	}
	r.reportGuards(wctx, st, job, fr)
	r.journalResult(st, job, p)
	return
}

// finishAlone finishes one job in one transaction (probe_finish), retried inside the budget;
// attempts counts the attempts made before, the batch's among them.
func (r *Round) finishAlone(ctx context.Context, each time.Duration, attempts *int, p queries.FinishParams,
	fr *queries.FinishResult) error {
	return retry(ctx, each, r.Log, string(writeFinishTx), func(ctx context.Context) error {
		r.hooks.before(ctx, writeFinishTx)
		if *attempts++; *attempts > 1 {
			// The attempt before may have committed without our hearing it, and probe_finish
			// answers a repeated job with a no-op that would read as a late finish.
			// The job is asked for by more than its id: after a failover the id may be another
			// server's claim, whose run is not this one (see replay_match.go).
			if stored, err := claimStored(ctx, r.DB, p); err != nil || stored {
				return cmp.Or(err, errRunStored)
			}
		}
		var err error
		*fr, err = queries.FinishTx(ctx, r.DB, p)
		return err
	})
}

// errRunStored: a retried finish found its job's run stored by an earlier attempt.
var errRunStored = errors.New("the job's run is stored already")

// check runs the check of one job inside its lease. The check may not outlive its budget nor the
// lease, whatever the checker does: its context ends with the first of them on the monotonic
// clock, and its every request asks the lease on both clocks first (check.WithFence). A check
// whose lease ended before it began is not made; one whose lease ended while it ran is fenced.
func (r *Round) check(ctx context.Context, job queries.ClaimedJob, l lease) check.Result {
	if err := l.ended(r.clock()); err != nil {
		now := time.Now().UTC()
		return fenced(normalise(check.Result{StartedAt: now, FinishedAt: now}), err)
	}
	target := check.Target{ServerID: job.ServerID, Slug: job.Slug, URL: job.URL, Kind: job.Kind, Transport: job.Transport}
	cctx, cancel := context.WithTimeout(ctx, r.Settings.CheckBudget())
	defer cancel()
	cctx, cancelLease := context.WithDeadline(cctx, l.mono)
	defer cancelLease()
	cctx = check.WithFence(cctx, func() error { return l.ended(r.clock()) })
	res := normalise(r.Checker.Check(cctx, target))
	if err := l.ended(r.clock()); err != nil {
		return fenced(res, err)
	}
	return res
}

// spoolResult keeps a result whose finish failed for good in the round's spool, for the next
// round or `runs recover` to store; without a spool, or if the spool fails too, the job stays
// open and the round says so.
func (r *Round) spoolResult(st *state, inv int, job queries.ClaimedJob, p queries.FinishParams, cause error) {
	if st.spool == nil {
		st.problem("job %d (%s): %v; the job stays open", job.JobID, job.Slug, cause)
		r.Log.Error("finish failed; the job stays open until the in-flight window closes it",
			"job", job.JobID, "server", job.Slug, "err", cause)
		return
	}
	err := st.spool.put(spoolEntry{RoundID: st.roundID, Slug: job.Slug, Finish: r.Settings.Finish,
		JobID: p.JobID, ServerID: p.ServerID, RequestedAt: &job.RequestedAt, ClaimedNextCheckAt: p.ClaimedNextCheckAt, Outcome: p.Outcome,
		Error: p.Error, StartedAt: p.StartedAt, CheckFinishedAt: p.CheckFinishedAt, Requests: p.Requests,
		Result: p.Result, Envelope: p.Envelope, SpooledAt: time.Now().UTC(), Cause: cause.Error()})
	if err != nil {
		st.problem("job %d (%s): %v; spooling its result failed too (%v): the job stays open", job.JobID, job.Slug, cause, err)
		r.Log.Error("finish and spool failed; the job stays open until the in-flight window closes it",
			"job", job.JobID, "server", job.Slug, "err", cause, "spool_err", err)
		return
	}
	st.mu.Lock()
	st.spooled++
	st.mu.Unlock()
	st.problem("job %d (%s): %v; its result is spooled in %s: the next run round (or runs recover) stores it",
		job.JobID, job.Slug, cause, st.spool.path())
	r.Log.Warn("finish failed; the result is spooled for the next round", "job", job.JobID, "server", job.Slug,
		"invocation", inv, "file", st.spool.path(), "err", cause)
}

// reportGuards says so when a guarded write matched nothing: that is the guard working, but an
// operator should know that something changed the row first. A finish that found its job closed
// asks the database what committed first: a run that is not late was stored by an earlier attempt
// of this same finish, and the job was never abandoned.
func (r *Round) reportGuards(ctx context.Context, st *state, job queries.ClaimedJob, fr queries.FinishResult) {
	if !fr.JobFinished {
		if late, err := queries.RunLate(ctx, r.DB, job.JobID); err == nil && !late {
			r.Log.Info("the finish had committed before its answer came back (an earlier attempt of it); the run is stored once",
				"job", job.JobID, "server", job.Slug, "run", fr.RunID)
			return
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !fr.JobFinished {
		// Late: the lease was lost, so the finish did not advance the server either.
		st.closedElsewise++
		r.Log.Warn("job was already closed (abandoned after the in-flight window); its run is stored as late, "+
			"the job and the server's next check time left as they were", "job", job.JobID, "server", job.Slug, "run", fr.RunID)
		return
	}
	if !fr.Advanced {
		st.advanceMisses++
		r.Log.Warn("next check time not advanced: it changed since the claim (a re-check, pause or delisting), and that change stands",
			"job", job.JobID, "server", job.Slug, "claimed_next_check_at", job.ClaimedNextCheckAt.Format(time.RFC3339Nano))
	}
}

// finishAdvanceFirst makes the two writes in the safe order: advance next_check_at while the job
// is still open, then store the run and close the job. At no moment is the server both due and
// without an open job. The advance is retried once; if it fails again the job is finished anyway
// and the round stops claiming (the only way the old gap can reopen, and never for our claims).
// Each write has its own timeout, each: an advance that hangs does not take its retry's time. The
// retry waits queries.RetryFirstWait first, as every retried write does (a database that just refused a
// write is seldom back a microsecond later), unless the finish's budget ends first.
func (r *Round) finishAdvanceFirst(ctx context.Context, each time.Duration, st *state, job queries.ClaimedJob,
	p queries.FinishParams) (queries.FinishResult, error) {
	advance := func() (bool, error) {
		var err error
		for attempt := 1; attempt <= 2; attempt++ {
			if attempt > 1 && !queries.Pause(ctx, queries.RetryFirstWait) {
				break
			}
			actx, acancel := context.WithTimeout(ctx, each)
			r.hooks.before(actx, writeAdvance)
			var advanced bool
			advanced, err = queries.AdvanceServer(actx, r.DB, job.JobID, job.ServerID, job.ClaimedNextCheckAt, nil)
			acancel()
			if err == nil {
				return advanced, nil
			}
			r.Log.Warn("advancing the next check time failed", "job", job.JobID, "server", job.Slug, "attempt", attempt, "err", err)
		}
		st.stop.Store(true)
		st.problem("job %d (%s): %v (twice); the job was finished anyway and the round stopped claiming", job.JobID, job.Slug, err)
		r.Log.Error("advancing the next check time failed twice: finishing the job anyway and claiming no more this round",
			"job", job.JobID, "server", job.Slug, "err", err)
		return false, err
	}
	finishJob := func() (fr queries.FinishResult, err error) {
		err = retry(ctx, each, r.Log, string(writeFinishJob), func(ctx context.Context) error {
			r.hooks.before(ctx, writeFinishJob)
			fr, err = queries.FinishJob(ctx, r.DB, p)
			return err
		})
		return fr, err
	}
	order := r.WriteOrder
	if order == nil {
		order = safeOrder
	}
	var (
		fr                 queries.FinishResult
		err, advErr        error
		advanced, finished bool
	)
	order(ctx, job, func() { advanced, advErr = advance() },
		func() error { fr, err = finishJob(); finished = true; return err },
		func() { r.hooks.between(ctx, job) })
	if !finished {
		return fr, errors.New("the write order did not finish the job")
	}
	if err != nil {
		return fr, err
	}
	fr.Advanced = advanced
	if advErr != nil {
		return fr, errAdvanceFailed
	}
	return fr, nil
}

// errAdvanceFailed: the advance failed twice but the job was finished; already reported.
var errAdvanceFailed = errors.New("advance failed")

// interrupted marks a result as the check that probectl stopped, keeping what it observed.
func interrupted(res check.Result, cause error) check.Result {
	msg := fmt.Sprintf("check interrupted by probectl (%v), not failed by the server", cause)
	if res.Error != "" {
		msg += ": " + res.Error
	}
	res.Outcome = check.OutcomeError
	res.Summary = "interrupted"
	res.Error = msg
	res.Fault = check.FaultProbectl
	return res
}

// normalise makes a checker's result storable: a known outcome and both times.
func normalise(res check.Result) check.Result {
	switch res.Outcome {
	case check.OutcomeOK, check.OutcomeFailed, check.OutcomeError:
	default:
		res.Error = fmt.Sprintf("checker returned outcome %q", res.Outcome)
		res.Outcome = check.OutcomeError
	}
	now := time.Now().UTC()
	if res.StartedAt.IsZero() {
		res.StartedAt = now
	}
	if res.FinishedAt.IsZero() {
		res.FinishedAt = now
	}
	if res.Requests == nil {
		res.Requests = []check.Request{}
	}
	return res
}
