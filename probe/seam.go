package probe

import (
	"context"
	"time"

	"github.com/probectl/probectl/queries"
)

// testKnobs are what a test may change in a round, grouped in one field of Round (as River's
// producer groups its testSignals) so that a reader sees at once what no user can set. The zero
// value changes nothing.
type testKnobs struct {
	hooks        hooks            // park or delay the round between writes
	finishBudget time.Duration    // replaces finishTimeout in the finishes (0: finishTimeout)
	now          func() time.Time // replaces time.Now for the round's time budget (nil: time.Now)
	// heartbeatEvery replaces queries.RoundHeartbeatEvery (0: it).
	heartbeatEvery time.Duration
	// claimCooldown replaces the constant claimCooldown (0: it).
	claimCooldown time.Duration
}

// write names each database write a round makes, for the test hooks.
type write string

const (
	writeClaim write = "claim" // probe_claim_due
	// writeCloseAbandoned is the round start's sweep (probe_close_abandoned).
	writeCloseAbandoned write = "close-abandoned"
	writeFinishTx       write = "finish-tx"  // probe_finish
	writeAdvance        write = "advance"    // first write of an advance-first finish
	writeFinishJob      write = "finish-job" // second write: the run and the job
	// writeFinishRound is the round's end (its finished_at).
	writeFinishRound write = "finish-round"
)

// hooks let tests stop or delay a round at the exact point they are about. Nil hooks do nothing.
type hooks struct {
	// beforeWrite runs before every write (stress tests inject random delays here).
	beforeWrite func(ctx context.Context, w write)
	// betweenFinishWrites runs between the two writes of an advance-first finish (the
	// interleaving test parks a finish here and claims meanwhile).
	betweenFinishWrites func(ctx context.Context, job queries.ClaimedJob)
}

func (h hooks) before(ctx context.Context, w write) {
	if h.beforeWrite != nil {
		h.beforeWrite(ctx, w)
	}
}

func (h hooks) between(ctx context.Context, job queries.ClaimedJob) {
	if h.betweenFinishWrites != nil {
		h.betweenFinishWrites(ctx, job)
	}
}
