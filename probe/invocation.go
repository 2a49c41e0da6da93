package probe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// claimTimeout bounds one claim, which runs even when the round is cancelled (see invoke). A
// claim is one short transaction; it waits only for other claims' locks.
const claimTimeout = 30 * time.Second

// claimCooldown is how long an invocation with checks in flight waits after a claim before it
// claims for fewer than half its slots: one claim then takes the servers of every slot freed
// meanwhile, instead of one server per freed slot, as River's fetch does after its cool-down.
// Every claim queues on one lock, so claims of one server each made the lock the round's ceiling
// (docs/scale.md). Half the slots free, or none in flight, claims at once.
const claimCooldown = 25 * time.Millisecond

// invoke is one invocation's loop: claim for its free slots, up to ClaimLimit over its life (of
// which earlier attempts of it claimed before), until a claim comes back empty, the budget is
// spent or the round stops claiming; then wait for the checks it holds. It returns its final
// counts, this attempt's.
func (r *Round) invoke(ctx context.Context, st *state, inv, before int, afterJob int64) Progress {
	s := r.Settings
	p := Progress{Invocation: inv, Claiming: true}
	// With a completer, a check's slot is free as soon as the check ends, and its finish is
	// committed behind it (River frees a worker before its completion too); the invocation still
	// waits for every finish before it returns. Without one (advance-first), a slot is held until
	// the finish, whose failure stops the round's claims.
	early := st.completer != nil
	checked := make(chan struct{}, s.ClaimLimit) // a check ended: its slot is free
	done := make(chan string, s.ClaimLimit)      // a job was finished: its check's outcome
	report := func() {
		if r.Progress != nil {
			r.Progress(p)
		}
	}
	// wait takes one event, or none if timeout or cancelled come first.
	wait := func(timeout <-chan time.Time, cancelled <-chan struct{}) {
		select {
		case <-checked:
			p.InFlight--
		case o := <-done:
			p.finished(o)
		case <-timeout:
			return
		case <-cancelled:
			return
		}
		report()
	}
	var lastClaim time.Time // on the monotonic clock
	var known []int64       // the jobs this attempt of the invocation claimed
	for {
		if st.stop.Load() || ctx.Err() != nil || before+p.Claimed >= s.ClaimLimit || !r.clock().Before(st.deadline) {
			break
		}
		// free is how many jobs this invocation may take now: a slot per check it may start, and no
		// more than its finishes waiting to commit leave room for (see finishBacklog).
		free := min(s.Concurrency-p.InFlight, s.Concurrency-p.finishing())
		if free <= 0 {
			wait(nil, nil)
			continue
		}
		if cool := r.cooldown() - time.Since(lastClaim); p.InFlight+p.finishing() > 0 && 2*free < s.Concurrency && cool > 0 {
			t := time.NewTimer(cool)
			wait(t.C, ctx.Done())
			t.Stop()
			continue
		}
		n := min(free, s.ClaimLimit-before-p.Claimed)
		r.hooks.before(ctx, writeClaim)
		if ctx.Err() != nil {
			break
		}
		if r.failedOver(ctx, st, inv) {
			break
		}
		// Once sent, a claim is waited for even if the round is cancelled: a claim queued on the
		// lock commits on the server whether or not its caller is still listening, and jobs
		// nobody heard of would stay open, unchecked, for the in-flight window. The jobs it
		// returns are worked as usual (a cancelled round's checks end at once and are recorded
		// as interrupted).
		// The jobs' lease starts before the claim is sent: the database dates them later.
		// A claim whose connection broke (a restart, a failover) is sent again on a fresh one within
		// its budget, as a finish is. If the first had committed after all, its answer lost, its
		// jobs are this invocation's, open, their servers leased: a retry looks for them first
		// (queries.LostClaim) and checks them as claimed, where they would stay open, checked by no
		// one, until the in-flight window closed them; no server is claimed twice. Then it asks
		// whether the database failed over: then this invocation claims no more.
		l := newLease(r.clock())
		sent := time.Now() // on the monotonic clock: how long ago the claim was first sent
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		var (
			jobs     []queries.ClaimedJob
			attempts int
			switched bool
		)
		err := retry(cctx, claimTimeout, r.Log, "claim due servers", func(actx context.Context) error {
			var err error
			if attempts++; attempts > 1 {
				// Jobs requested since the first attempt was sent, give or take how long this look
				// may take to reach the database (a fresh connection: at most an attempt's budget).
				jobs, err = queries.LostClaim(actx, r.DB, queries.LostClaimParams{RoundID: st.roundID, Invocation: inv,
					AfterJob: afterJob, Known: known, Since: time.Since(sent) + claimTimeout, Limit: n})
				if err != nil || len(jobs) > 0 {
					if len(jobs) > 0 {
						r.Log.Warn("a claim's answer was lost after it committed: its jobs are checked as claimed",
							"invocation", inv, "jobs", len(jobs))
					}
					return err
				}
				if r.failedOver(actx, st, inv) {
					switched = true
					return nil
				}
			}
			jobs, err = queries.Claim(actx, r.DB, queries.ClaimParams{
				RoundID: st.roundID, Invocation: inv, Limit: n, MinSpacing: s.MinSpacing.D(),
				Timeline: st.journal.roundTimeline(),
			})
			return err
		})
		cancel()
		if switched || (err == nil && len(jobs) == 0 && r.failedOver(ctx, st, inv)) {
			break // failed over: the claim, sent to the promoted standby, claimed nothing
		}
		// The cool-down runs from the claim's answer: a claim that waited long for the lock must
		// not make the next one go out at once for a single slot.
		lastClaim = time.Now()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w (after %s; if it committed after all, its jobs stay open until the in-flight window closes them)",
					err, claimTimeout)
			}
			st.problem("invocation %d: %v", inv, err)
			r.Log.Error("claim failed; this invocation stops claiming", "invocation", inv, "err", err)
			break
		}
		if len(jobs) == 0 {
			break
		}
		for _, job := range jobs {
			known = append(known, job.JobID)
		}
		p.Claimed += len(jobs)
		p.InFlight += len(jobs)
		report()
		for _, job := range jobs {
			go func() {
				free := func() {}
				if early {
					free = func() { checked <- struct{}{} }
				}
				o := r.work(ctx, st, inv, job, l, free)
				if !early {
					checked <- struct{}{}
				}
				done <- o
			}()
		}
	}
	p.Claiming = false
	report()
	for p.InFlight > 0 || p.Done < p.Claimed {
		wait(nil, nil)
	}
	return p
}

// cooldown is claimCooldown, unless a test set its own.
func (r *Round) cooldown() time.Duration {
	if r.claimCooldown > 0 {
		return r.claimCooldown
	}
	return claimCooldown
}

// finishing counts the jobs whose check has ended and whose finish has not been answered yet:
// each holds its result, its goroutine and its place in the completer's queue. With a check's slot
// freed when its check ends, a round whose finishes commit slower than its checks end would
// otherwise claim on, and hold the results of every server it claimed (a 10,000-server round held
// 232 MiB): an invocation holds at most Concurrency of them besides its Concurrency checks, so a
// round's memory follows its slots, never the servers it claims.
func (p *Progress) finishing() int { return p.Claimed - p.Done - p.InFlight }

// finished counts one job finished, whose check ended with outcome.
func (p *Progress) finished(outcome string) {
	p.Done++
	if outcome != check.OutcomeOK {
		p.NotOK++
	}
}
