package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// StartRound records a round that is about to run with settings s (keyID "" when unsigned) and
// returns its id and start. Run calls it; a queued round (probe/worker) calls it in the
// transaction that queues the round's invocations, so the round and its work appear together.
// It first closes the jobs open past the in-flight window as abandoned, once for the round: its
// claims do not (probe_claim_due), and skip a server whose job is open past the window until a
// round's start closes it.
func StartRound(ctx context.Context, db queries.DBTX, s Settings, keyID string) (int64, time.Time, error) {
	if err := closeAbandoned(ctx, db); err != nil {
		return 0, time.Time{}, err
	}
	return insertRound(ctx, db, s, keyID)
}

// closeAbandoned closes the jobs open past the in-flight window as abandoned (a round's start).
// Running it again closes nothing more: a caller may retry it.
func closeAbandoned(ctx context.Context, db queries.DBTX) error {
	if _, err := queries.CloseAbandoned(ctx, db, queries.InFlightWindow, nil); err != nil {
		return fmt.Errorf("start round: %w", err)
	}
	return nil
}

// insertRound records the round (StartRound's second step).
func insertRound(ctx context.Context, db queries.DBTX, s Settings, keyID string) (int64, time.Time, error) {
	id, startedAt, err := queries.InsertRound(ctx, db, settings.RecordOf(s, keyID), nil)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("start round: %w", err)
	}
	return id, startedAt, nil
}

// Invocation is one invocation of a round started elsewhere (StartRound), run on its own, as a
// worker runs the invocations of a queued round: claim, check, sign and finish exactly as an
// invocation of Round.Run does. Running the same invocation again (River retries one that failed
// or ended incomplete) is harmless: its claims find nothing that another job holds or that was
// checked within the spacing guard, and it claims only what its earlier attempts left of its
// share (ClaimLimit), so that a round never claims more than its capacity.
type Invocation struct {
	DB       queries.DBTX
	Settings Settings
	Checker  Checker
	Signer   Signer
	Log      *slog.Logger

	RoundID int64
	Index   int // 0 is the cron invocation, 1.. the fan-out
	// Deadline is the round's start plus its time budget: no claim starts after it.
	Deadline time.Time
	// SpoolDir, if set, is where this invocation spools the results it cannot store (one file of
	// its own, as a round's), for the worker's next replay or `runs recover`; "" keeps such jobs
	// open. The caller replays the spool (Recover), not the invocation.
	SpoolDir string
}

// Run runs the invocation and returns its counts. The error is an *InterruptedError when ctx was
// cancelled (its checks stopped midway are stored as interrupted), else an *IncompleteError when
// a claim or a finish failed.
func (inv *Invocation) Run(ctx context.Context) (Progress, error) {
	if inv.DB == nil || inv.Checker == nil {
		return Progress{}, errors.New("probe: an invocation needs a database and a checker")
	}
	log := inv.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := &Round{DB: inv.DB, Settings: inv.Settings, Checker: inv.Checker, Signer: inv.Signer, Log: log}
	st := &state{roundID: inv.RoundID, deadline: inv.Deadline}
	if inv.SpoolDir != "" {
		st.spool = &spool{dir: inv.SpoolDir, roundID: inv.RoundID}
		st.journal = r.openJournal(ctx, st, inv.SpoolDir, inv.RoundID)
	}
	// The earlier attempts' claims count against this one's share. Counted before the first claim
	// of this attempt; attempts of one invocation never run at once (River runs a job once at a
	// time, and retries it only after its attempt ended or its worker was judged dead).
	// The jobs past the last of them are this attempt's: a claim whose answer it lost is looked for
	// there, never among an earlier attempt's, whose results may wait in a spool.
	before, err := queries.InvocationClaimed(ctx, inv.DB, inv.RoundID, inv.Index)
	if err != nil {
		return Progress{Invocation: inv.Index}, &IncompleteError{Problems: []string{fmt.Sprintf("invocation %d: %v", inv.Index, err)}}
	}
	p := r.invoke(ctx, st, inv.Index, before.Claimed, before.LastJob)
	if st.journal != nil {
		r.closeJournal(ctx, st)
	}
	if st.spool != nil {
		if err := st.spool.close(); err != nil {
			st.problem("close spool file %s: %v", st.spool.path(), err)
		}
	}
	st.mu.Lock()
	problems := slices.Clone(st.problems)
	st.mu.Unlock()
	if ctx.Err() != nil {
		return p, &InterruptedError{Cause: context.Cause(ctx), Problems: problems}
	}
	if len(problems) > 0 {
		return p, &IncompleteError{Problems: problems}
	}
	return p, nil
}

// CheckKey refuses a signing key whose runs nobody could verify (not registered, or retired), as
// a round does before it claims: a worker checks its key once, when it starts.
func CheckKey(ctx context.Context, db queries.DBTX, keyID string) error {
	return (&Round{DB: db}).checkKeyRegistered(ctx, keyID)
}
