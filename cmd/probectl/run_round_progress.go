package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
)

// roundProgress is the one progress display of a round on a terminal's stderr: a bar of the jobs
// done against those claimed (or, while claiming goes on, against what the invocations may still
// claim), with the counts, the time elapsed and an estimate of the time left.
type roundProgress struct {
	mu    sync.Mutex
	per   map[int]probe.Progress
	limit int // jobs the round may claim at most: invocations × claim limit
	start time.Time
	p     *mpb.Progress
	bar   *mpb.Bar
}

func newRoundProgress(w io.Writer, invocations, claimLimit int) *roundProgress {
	rp := &roundProgress{per: map[int]probe.Progress{}, limit: invocations * claimLimit, start: time.Now()}
	// The stream is a terminal (the caller checks): refresh it as one would any terminal.
	rp.p = mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh())
	rp.bar = rp.p.AddBar(int64(max(rp.limit, 1)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return rp.words() })),
	)
	return rp
}

// report takes one invocation's counts (from the invocations' goroutines).
func (rp *roundProgress) report(pr probe.Progress) {
	rp.mu.Lock()
	rp.per[pr.Invocation] = pr
	claimed, done, claiming := rp.totalsLocked()
	rp.mu.Unlock()
	total := rp.limit
	if !claiming {
		total = claimed // nobody claims any more: what was claimed is all there is to do
	}
	rp.bar.SetTotal(int64(max(total, 1)), false)
	rp.bar.SetCurrent(int64(done))
}

func (rp *roundProgress) totalsLocked() (claimed, done int, claiming bool) {
	for _, pr := range rp.per {
		claimed += pr.Claimed
		done += pr.Done
		claiming = claiming || pr.Claiming
	}
	return claimed, done, claiming || len(rp.per) == 0
}

// words: "claimed 40, in flight 12, done 28, failed 2, 3.2s elapsed, ~1s left" (short: it shares
// a terminal line with the bar; failed counts the checks done whose outcome was not ok).
func (rp *roundProgress) words() string {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	claimed, done, claiming := rp.totalsLocked()
	inFlight, failed := 0, 0
	for _, pr := range rp.per {
		inFlight += pr.InFlight
		failed += pr.NotOK
	}
	elapsed := time.Since(rp.start)
	s := fmt.Sprintf("claimed %d, in flight %d, done %d, failed %d, %s elapsed", claimed, inFlight, done, failed, render.Duration(elapsed.Truncate(time.Second/10)))
	total := claimed
	if claiming {
		total = rp.limit
	}
	if done > 0 && total > done {
		left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
		s += ", ~" + render.Duration(left.Truncate(time.Second)) + " left"
	}
	return s
}

// finish completes the bar and waits for its last drawing: the summary comes after it.
func (rp *roundProgress) finish() {
	rp.mu.Lock()
	claimed, _, _ := rp.totalsLocked()
	rp.mu.Unlock()
	rp.bar.SetTotal(int64(max(claimed, 1)), true)
	rp.p.Wait()
}
