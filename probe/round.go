package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// Checker checks one server. check.Checker is the real one; tests use fakes. Check must not
// panic: a failure is a Result with outcome failed or error.
type Checker interface {
	Check(ctx context.Context, t check.Target) check.Result
}

// Signer signs a run. attest.Signer is the real one.
type Signer interface {
	KeyID() string
	Sign(r attest.Run) (json.RawMessage, error)
}

// Progress is one invocation's counts, reported whenever they change.
type Progress struct {
	Invocation int
	Claimed    int // jobs claimed so far
	InFlight   int // checks running
	Done       int // jobs finished (or left open after a finish error)
	NotOK      int // of those, checks whose outcome was not ok (failed or error)
	Claiming   bool
}

// RoundConns is how many database connections `run round` opens for its work: its pool, shared by
// every invocation's claims, the two batches of finishes that may commit at once
// (completerWorkers), the finishes made one at a time, an MCP check's tools and the replays. A
// statement holds one only while it runs, and nothing in a round waits for a second connection
// while it holds one. The heartbeat has one of its own besides (beat), so that it never waits
// behind the round's work.
//
// Each new connection is a new PostgreSQL backend that plans the claim, the batched finish and
// their triggers' statements for itself (plans are kept per session, 00025) and loads the
// catalog of every partition they read: ~50 ms of the database's CPU for the claim's first call
// alone, paid again on every connection of every round, since a round is a process of its own. A
// pool of 25 spread a round's claims over as many connections, each paying it. Measured with
// BenchmarkThroughput at the size (10,000 servers, fan-out 19, 1,000 slots) on 2 cores
// (docs/scale.md): with 4 connections 1,801-2,087 servers/s with a GET and 3,635-3,795 no-op,
// against 1,413-1,603 and 2,700-3,018 with 30; pools of 2 and 3 ran about as fast as 4, of 6 to
// 12 in between; gating the statements rather than the connections over 30 connections gained
// a tenth (claims alone) or nothing (claims and batches, 3 or 4 at once): it is mostly the
// connections that cost. Measured alone, a claim of ~16 servers took 2-5 ms and a batched finish
// ~150 us a server: at 1,111 checks a second (a million servers every 15 minutes) about 0.4 s of
// connection time a second, a tenth of four (an MCP check that lists tools adds a statement of
// its own, not measured so).
const RoundConns = 4

// Round is one round: set the fields, then call Run once.
type Round struct {
	// DB is where claims and finishes go: a pool, never a transaction (a claim's lock lasts until
	// its transaction ends).
	DB       queries.DBTX
	Settings Settings
	Checker  Checker
	// Signer signs runs; nil stores them unsigned (envelope NULL), as --unsigned asks.
	Signer Signer
	// Log receives warnings and errors (guards that matched nothing, failed writes); nil discards.
	Log *slog.Logger
	// Progress, if set, is called from the invocations' goroutines whenever counts change; it must
	// be safe for concurrent use.
	Progress func(Progress)
	// SpoolDir, if set, is where results that could not be stored wait for the next round: the
	// round first stores what waits there (Recover), then spools what it cannot store itself. ""
	// keeps such jobs open, as visible failures, and spools nothing.
	SpoolDir string
	// WriteOrder, if set, makes the two writes of an advance-first finish in an order of its own;
	// nil (the default) is the safe order. See WriteOrder: no flag and no release setting sets it.
	WriteOrder WriteOrder

	// testKnobs are the round's test seams, all in one field (see seam.go): unexported, so nothing
	// outside this package (no flag, no release) reaches them; the zero value is the real round.
	testKnobs
}

// Summary is what a round did, counted from the database when it ended.
type Summary struct {
	RoundID  int64
	Settings Settings
	KeyID    string // "" when unsigned, or when SignedByWorkers
	// SignedByWorkers: a queued round, whose runs each worker signed with its own key (or stored
	// unsigned); no one key signed the round.
	SignedByWorkers bool
	StartedAt       time.Time
	FinishedAt      time.Time

	Invocations int
	queries.RoundCounts
	// CountsUnknown: the database did not answer when the round counted what it left, so
	// RoundCounts are not its counts (zero is not "no jobs"); status and deploy verify read them
	// once the database is back.
	CountsUnknown bool
	// StoppedClaiming: an advance failed twice, so the round stopped claiming (advance-first).
	StoppedClaiming bool
	// Interrupted: the round's context was cancelled (Ctrl-C, SIGTERM) before it ended on its own;
	// it claimed no more, and the checks it stopped midway are stored as interrupted.
	Interrupted bool
	// AdvanceMisses counts finishes whose compare-and-set on next_check_at matched nothing: the
	// server was re-checked, paused or delisted meanwhile.
	AdvanceMisses int
	// JobsClosedElsewhere counts finishes that found their job already closed (as abandoned): late
	// finishes, whose runs are stored marked late and which advanced nothing.
	JobsClosedElsewhere int
	// FinishBatches: the batches of finishes the round sent (the one-transaction mode), how many
	// failed, their jobs then finished one at a time, and why.
	FinishBatches BatchFailures
	// Fenced counts checks stopped or never made because their job's lease had ended (stored at
	// probectl's fault, "fault": "probectl" in their result).
	Fenced int
	// Problems are the errors that make the round incomplete (exit 3), in the order they happened.
	Problems []string
	// PerInvocation are the final counts of each invocation.
	PerInvocation []Progress
	// Recovered is what the round stored from the spool before it claimed (nil without a spool).
	Recovered *Recovery
	// Spooled counts the results this round could not store and spooled, in SpoolFile.
	Spooled   int
	SpoolFile string
	// Journal is what the replay of the failover journals did when the round ended (nil without
	// a spool directory): after a failover, what the new primary lacked of this round's results.
	Journal *JournalReplay
	// JournalSetAside says each failover journal the replays at the round's start and end set
	// aside for a person to read (JournalReplay.SetAside).
	JournalSetAside []string
}

// Duration is how long the round took.
func (s *Summary) Duration() time.Duration { return s.FinishedAt.Sub(s.StartedAt) }

// ClaimedTwice says the round broke the invariant: it has more jobs than servers, so some server
// was claimed twice within it (a job has one server, so fewer servers than jobs means a repeat).
func (s *Summary) ClaimedTwice() bool { return s.Jobs > s.Servers }

// IncompleteError says the round ran but claims, finishes or signatures failed: some work could
// not be done, and the summary says which.
type IncompleteError struct{ Problems []string }

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("round incomplete: %d problem(s): %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// ExitCode: the work could not all be done.
func (e *IncompleteError) ExitCode() int { return exit.Unavailable }

// InterruptedError says the round was stopped (Ctrl-C, SIGTERM) before it ended on its own: the
// due servers it did not claim wait for the next round, and the checks it stopped midway are
// stored as interrupted by probectl. Problems holds every problem of the round, the
// interruption among them.
type InterruptedError struct {
	Cause    error // context.Cause of the round's context
	Problems []string
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("round interrupted (%v): %d problem(s): %s", e.Cause, len(e.Problems), strings.Join(e.Problems, "; "))
}

func (e *InterruptedError) Unwrap() error { return e.Cause }

// ExitCode: the round's work was not all done.
func (e *InterruptedError) ExitCode() int { return exit.Unavailable }

// finishTimeout bounds a finish's writes, all together: a job's worst case counts it
// (Settings.JobWorstCase). They run even after the round's context is cancelled (Ctrl-C), so that
// a check that was made is recorded rather than left open. Each write has a third of it
// (finishWrites), so that an advance that times out leaves time for its retry and for the run and
// the job.
const finishTimeout = settings.FinishTimeout

// FinishTimeout is finishTimeout for a process that must wait for finishes under way before it
// exits (the worker's stop): a result is stored or spooled within it, never dropped.
const FinishTimeout = finishTimeout

// finishWrites is the most writes a finish makes: advance, its retry, then the run and the job.
const finishWrites = 3

// finishBudgets are the finish's timeout, all writes together, and each write's own.
func (r *Round) finishBudgets() (all, each time.Duration) {
	all = finishTimeout
	if r.finishBudget > 0 {
		all = r.finishBudget
	}
	return all, all / finishWrites
}

// clock is the time the round's budget is judged by: this host's, unless a test set now.
func (r *Round) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// state is what the invocations of one round share.
type state struct {
	roundID  int64
	deadline time.Time
	stop     atomic.Bool // stop claiming: an advance failed twice

	mu       sync.Mutex
	problems []string
	// journalSetAside: the journals the replays at the round's start and end set aside
	journalSetAside []string
	advanceMisses   int
	closedElsewise  int
	interrupted     int // checks stopped midway by the round's cancellation
	fenced          int // checks stopped or not made because their lease ended
	spooled         int // results written to the spool

	spool *spool // nil: no spool
	// journal keeps what the round stored for a failover's replay; nil: no spool, no journal.
	journal *journal
	// completer batches the finishes of the one-transaction mode; nil finishes one at a time.
	completer *completer
}

func (st *state) problem(format string, args ...any) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.problems = append(st.problems, fmt.Sprintf(format, args...))
}

// Run runs the round: it validates the settings, records the round, runs every invocation and
// returns the summary. The error is a *SettingsError (nothing done), an error from before the
// round started (nothing claimed), or, alongside a summary, an *InterruptedError when ctx was
// cancelled during the round, else an *IncompleteError when something failed.
func (r *Round) Run(ctx context.Context) (*Summary, error) {
	if err := r.Settings.Validate(); err != nil {
		return nil, err
	}
	if r.DB == nil || r.Checker == nil {
		return nil, errors.New("probe: a round needs a database and a checker")
	}
	if r.Log == nil {
		r.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	keyID := ""
	if r.Signer != nil {
		keyID = r.Signer.KeyID()
		if err := r.checkKeyRegistered(ctx, keyID); err != nil {
			return nil, err
		}
	}
	var recovered *Recovery
	if r.SpoolDir != "" {
		// What an earlier round could not store is stored before this one claims: its servers'
		// runs come first, and a spool that cannot be used stops the round before it claims.
		rec, err := Recover(ctx, r.DB, r.SpoolDir, r.Log)
		if err != nil {
			return nil, err
		}
		rec.LogSetAside(r.Log)
		recovered = &rec
	}
	s := r.Settings
	// The sweep is retried within the write budget, as every write a round makes: a database
	// failing over as the round starts is not a reason to stop (the insert that follows is not:
	// an insert whose answer was lost would leave a round that never runs, seen dead).
	all, each := r.finishBudgets()
	sctx, cancel := context.WithTimeout(ctx, all)
	err := retry(sctx, each, r.Log, string(writeCloseAbandoned), func(ctx context.Context) error {
		r.hooks.before(ctx, writeCloseAbandoned)
		return closeAbandoned(ctx, r.DB)
	})
	cancel()
	if err != nil {
		return nil, err
	}
	roundID, startedAt, err := insertRound(ctx, r.DB, s, keyID)
	if err != nil {
		return nil, err
	}
	st := &state{roundID: roundID, deadline: r.clock().Add(s.MaxDuration.D())}
	// The round beats from its start to its end: the failover journals' replay before its claims
	// and after its checks, and the round's end, have a budget of 30 s each (a result's, at the
	// start), and a round silent for 60 s is taken for dead (a round.dead alert).
	stopBeating := r.beat(ctx, roundID)
	defer stopBeating() // also called below, once the round has ended
	if r.SpoolDir != "" {
		st.spool = &spool{dir: r.SpoolDir, roundID: roundID}
		st.journal = r.openJournal(ctx, st, r.SpoolDir, roundID)
	}
	if recovered != nil {
		for _, p := range recovered.Problems {
			st.problem("spool: %s", p)
		}
	}

	if s.Finish == FinishTx {
		_, each := r.finishBudgets()
		st.completer = newCompleter(r.DB, each, r.Log)
	}
	per := make([]Progress, s.Invocations())
	var wg sync.WaitGroup
	for inv := range s.Invocations() {
		// The round is new: every job of it with this invocation's index is this invocation's.
		wg.Go(func() { per[inv] = r.invoke(ctx, st, inv, 0, 0) })
	}
	wg.Wait()
	var batches BatchFailures
	if st.completer != nil {
		batches = st.completer.close() // every check has its finish answered by now
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		st.mu.Lock()
		n := st.interrupted
		st.mu.Unlock()
		st.problem("the round was interrupted (%v): it claimed no more, and %d check(s) it stopped midway were "+
			"stored as interrupted by probectl, not as failures of the servers", context.Cause(ctx), n)
	}

	sum := &Summary{RoundID: roundID, Settings: s, KeyID: keyID, StartedAt: startedAt,
		Invocations: s.Invocations(), PerInvocation: per, StoppedClaiming: st.stop.Load(), Interrupted: interrupted,
		Recovered: recovered, FinishBatches: batches}
	if st.spool != nil {
		sum.SpoolFile = st.spool.path()
		if err := st.spool.close(); err != nil {
			st.problem("close spool file %s: %v", sum.SpoolFile, err)
		}
	}
	if st.journal != nil {
		sum.Journal = r.closeJournal(ctx, st)
	}
	r.closeRound(ctx, st, sum)
	stopBeating()
	st.mu.Lock()
	sum.Problems = slices.Clone(st.problems)
	sum.JournalSetAside = slices.Clone(st.journalSetAside)
	sum.AdvanceMisses, sum.JobsClosedElsewhere, sum.Fenced = st.advanceMisses, st.closedElsewise, st.fenced
	sum.Spooled = st.spooled
	st.mu.Unlock()
	if interrupted {
		return sum, &InterruptedError{Cause: context.Cause(ctx), Problems: sum.Problems}
	}
	if len(sum.Problems) > 0 {
		return sum, &IncompleteError{Problems: sum.Problems}
	}
	return sum, nil
}

// closeRound writes the round's end and counts what it left. It is written even after a cancel,
// like the finishes, and retried like them inside the same budget.
func (r *Round) closeRound(ctx context.Context, st *state, sum *Summary) {
	all, each := r.finishBudgets()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), all)
	defer cancel()
	err := retry(wctx, each, r.Log, "finish round", func(ctx context.Context) error {
		r.hooks.before(ctx, writeFinishRound)
		var err error
		sum.FinishedAt, err = queries.FinishRound(ctx, r.DB, st.roundID, nil)
		return err
	})
	if err != nil {
		st.problem("%v", err)
		sum.FinishedAt = time.Now()
	}
	err = retry(wctx, each, r.Log, "count round", func(ctx context.Context) error {
		var err error
		sum.RoundCounts, err = queries.CountRound(ctx, r.DB, st.roundID)
		return err
	})
	if err != nil {
		sum.CountsUnknown = true
		st.problem("%v", err)
	}
}

// KeyError says the signing key cannot sign runs that verify: bad input, nothing was claimed.
type KeyError struct {
	Msg  string
	text *input.Text // Msg with its inputs kept apart (newKeyError); nil: none
}

func (e *KeyError) Error() string { return e.Msg }

// ExitCode: a key that is not registered is bad input.
func (e *KeyError) ExitCode() int { return exit.Usage }

// checkKeyRegistered refuses to sign with a key whose runs nobody could verify: one that is not
// registered, or was retired (deploy verify refuses what a key signs after its retirement).
func (r *Round) checkKeyRegistered(ctx context.Context, keyID string) error {
	keys, err := queries.VerificationKeys(ctx, r.DB)
	if err != nil {
		return fmt.Errorf("read signing keys: %w", err)
	}
	k, ok := keys[keyID]
	switch {
	case !ok:
		return newKeyError("signing key %s is not registered in signing_keys, so its runs could not be "+
			"verified in this database; register it here ('probectl keys register KEY_FILE' stores its public half) or pass %s", keyID, InputUnsigned)
	case k.RetiredAt != nil:
		return newKeyError("signing key %s was retired at %s, so its runs would not verify; sign with "+
			"a current key (probectl keys generate makes one) or pass %s", keyID, k.RetiredAt.Format(time.RFC3339), InputUnsigned)
	}
	return nil
}
