package probe

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// A round closes the jobs open past the in-flight window when it starts, once (its claims do not,
// probe_claim_due): the server of a job whose prober died is claimed again by the next round, and
// the dead job is closed as abandoned.
func TestARoundStartClosesAnAbandonedJobAndClaimsItsServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testDB(t)
	requested := time.Now().Add(-queries.InFlightWindow - time.Minute)
	// As a dead prober's claim left it: leased until its job's window ended, a minute ago.
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(requested.Add(queries.InFlightWindow))})
	dead := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &requested})

	sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: &okChecker{}}).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Runs, "the round checks the server whose job was abandoned")

	var outcome string
	require.NoError(t, pool.QueryRow(ctx, "SELECT outcome FROM probe_jobs WHERE id = $1", dead).Scan(&outcome))
	require.Equal(t, "abandoned", outcome)
}

// breakFirstSweep is a pgx tracer that, the first time a connection sends the round start's sweep,
// has that connection's backend terminated first: the statement meets a dead connection, as it
// does when the database fails over while a round starts.
type breakFirstSweep struct {
	admin *pgxpool.Pool
	once  sync.Once
}

func (b *breakFirstSweep) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if data.SQL == queries.SQL("CloseAbandoned") {
		b.once.Do(func() {
			_, _ = b.admin.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID())
		})
	}
	return ctx
}

func (b *breakFirstSweep) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A round whose start meets a connection broken by a failover tries its sweep again on a fresh
// connection within its write budget, as every write of a round, rather than exit 3 (seen in the
// failover test: "start round: close abandoned jobs: unexpected EOF").
func TestARoundStartsWhenItsSweepMeetsABrokenConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	admin := dbtest.Pool(t, url)
	pool := dbtest.Pool(t, url, dbtest.MaxConns(8), dbtest.Tracer(&breakFirstSweep{admin: admin}))
	dueServers(t, pool, 2)
	sum, err := (&Round{DB: pool, Settings: testSettings(FinishTx), Checker: &okChecker{}}).Run(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, sum.Runs)
}
