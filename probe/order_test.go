package probe

// The order of an advance-first finish's writes, and a second claimer in the gap between them:
// the incident's cause. Each proof is a function that reports what it found, run twice: once
// on the code as it is (it must pass) and once with the incident's order put back through
// Round.WriteOrder (it must fail), so the suite itself shows that the proofs can fail.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/probe/incident"
	"github.com/probectl/probectl/queries"
)

// incidentOrder is the incident's order of writes (finish the job, then move the next check
// time) exactly as the demo puts it back (probe/incident), so that the tests prove the order the
// demo replays rather than a copy of it.
func incidentOrder() WriteOrder {
	return incident.Order(nil)
}

// callRecorder is a pgx tracer that records, in order, which of the named queries a pool sent.
type callRecorder struct {
	names map[string]string // SQL text -> query name
	mu    sync.Mutex
	calls []string
}

func newCallRecorder(names ...string) *callRecorder {
	c := &callRecorder{names: map[string]string{}}
	for _, n := range names {
		c.names[queries.SQL(n)] = n
	}
	return c
}

func (c *callRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if name, ok := c.names[data.SQL]; ok {
		c.mu.Lock()
		c.calls = append(c.calls, name)
		c.mu.Unlock()
	}
	return ctx
}

func (c *callRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// finishCalls runs a one-server round in advance-first mode and returns the database calls the
// driver sent for it.
func finishCalls(t *testing.T, order WriteOrder) []string {
	t.Helper()
	rec := newCallRecorder("Claim", "AdvanceServer", "FinishJob", "FinishTx")
	pool := dbtest.Pool(t, migrated.NewDB(t), dbtest.MaxConns(4), dbtest.Tracer(rec))
	dueServers(t, pool, 1)
	s := testSettings(FinishAdvanceFirst)
	s.ClaimLimit = 1
	_, err := (&Round{DB: pool, Settings: s, Checker: &okChecker{}, WriteOrder: order}).Run(t.Context())
	require.NoError(t, err)
	return rec.calls
}

// advanceComesFirst is the order test's verdict on the recorded calls.
func advanceComesFirst(calls []string) error {
	advance, finish := slices.Index(calls, "AdvanceServer"), slices.Index(calls, "FinishJob")
	if advance < 0 || finish < 0 {
		return fmt.Errorf("expected an advance and a finish, got %v", calls)
	}
	if advance > finish {
		return fmt.Errorf("the job was finished (call %d) before the next check time was advanced (call %d): %v", finish, advance, calls)
	}
	return nil
}

func TestAnAdvanceFirstFinishAdvancesBeforeItFinishesTheJob(t *testing.T) {
	t.Parallel()
	calls := finishCalls(t, nil)
	require.Equal(t, []string{"Claim", "AdvanceServer", "FinishJob"}, calls)
	require.NoError(t, advanceComesFirst(calls))
}

func TestTheOrderTestFailsWithTheIncidentsOrder(t *testing.T) {
	t.Parallel()
	calls := finishCalls(t, incidentOrder())
	require.ErrorContains(t, advanceComesFirst(calls), "finished (call 1) before the next check time was advanced (call 2)")
}

// allButSpacing are the layers as a round runs them, less the spacing guard and the lease: either
// would hide the gap between the two writes (each is proven on its own in the layer tests).
var allButSpacing = layers{lock: true, order: true, index: true}

func TestASecondClaimerBetweenTheTwoWritesOfAFinishGetsNothing(t *testing.T) {
	t.Parallel()
	require.Empty(t, claimInTheGap(t, allButSpacing))
}

func TestTheInterleavingTestFailsWithTheIncidentsOrder(t *testing.T) {
	t.Parallel()
	incident := allButSpacing
	incident.order = false
	got := claimInTheGap(t, incident)
	require.Len(t, got, 1, "with the job finished first, the server is due and has no open job: a second claimer takes it")
}
