package probe

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// A claim that commits while its answer is lost (the connection breaks between PostgreSQL's
// commit and the client's read: a restart, a network cut, a failover to a synchronous standby)
// leaves its jobs open and their servers leased. The retry finds them and checks them as claimed:
// every server is checked once and the round completes. Before, they stayed open, checked by no
// one, until the in-flight window closed them as abandoned (CI saw it: a failover test waited 2
// minutes for servers leased for 15).
//
// The round's connections go through a dialer that, the first time a connection sends the claim
// (probe_claim_due), lets PostgreSQL answer it whole, commit included (its CommandComplete, then
// ReadyForQuery), and drops the answer and the connection: the client reads EOF, as when a
// connection breaks there.
func TestAClaimWhoseAnswerWasLostIsCheckedAsClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDB(t)
	setup := dbtest.Pool(t, url)
	const n = 4
	for range n {
		testfactory.Server(ctx, t, setup, nil)
	}
	var dropped atomic.Int32
	dialer := &net.Dialer{}
	pool := dbtest.Pool(t, url, dbtest.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &claimAnswerLoser{Conn: c, dropped: &dropped}, nil
	}))
	checker := &okChecker{}
	s := testSettings(FinishTx)
	s.Fanout, s.ClaimLimit, s.Concurrency = 0, n, n
	sum, err := (&Round{DB: pool, Settings: s, Checker: checker}).Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, dropped.Load(), "one claim's answer was lost after its commit")
	require.Equal(t, n, sum.Jobs)
	require.Equal(t, n, sum.Runs, "every server checked, the lost claim's included")
	require.Len(t, checker.checked, n)
	seen := map[int64]bool{}
	for _, c := range checker.checked {
		require.False(t, seen[c.ServerID], "server %d checked twice", c.ServerID)
		seen[c.ServerID] = true
	}
	open, err := queries.ListRoundJobs(ctx, setup, sum.RoundID)
	require.NoError(t, err)
	for _, j := range open {
		require.NotNil(t, j.RunID, "job %d has its run", j.JobID)
	}
}

// claimAnswerLoser is a connection that loses the answer to the first claim it carries, once its
// commit is answered: see TestAClaimWhoseAnswerWasLostIsCheckedAsClaimed.
type claimAnswerLoser struct {
	net.Conn
	dropped *atomic.Int32
	armed   atomic.Bool // the claim was sent: its answer is read here (pgx may read in a goroutine of its own)
	in      []byte      // read from PostgreSQL, not yet judged
	out     []byte      // judged, for the client
	// holding: the statement's own answer began (BindComplete, a row or CommandComplete): it is
	// held back, not given to the client; done: its CommandComplete came.
	holding, done bool
}

func (c *claimAnswerLoser) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("probe_claim_due(")) && c.dropped.Load() == 0 {
		c.armed.Store(true)
	}
	return c.Conn.Write(p)
}

// Read gives the client the claim's prepare (pgx prepares a statement first, with a ReadyForQuery
// of its own) and holds back the statement's answer, message by message (a type byte and a length
// that counts itself), up to the ReadyForQuery after its CommandComplete: the statement's implicit
// transaction committed before that. Then the connection breaks, the answer lost.
func (c *claimAnswerLoser) Read(p []byte) (int, error) {
	if !c.armed.Load() {
		return c.Conn.Read(p)
	}
	buf := make([]byte, 4096)
	for {
		for len(c.in) >= 5 {
			size := 1 + int(binary.BigEndian.Uint32(c.in[1:5]))
			if len(c.in) < size {
				break
			}
			msg := c.in[:size]
			c.in = c.in[size:]
			switch kind := msg[0]; {
			case !c.holding && kind != '2' && kind != 'D' && kind != 'C':
				c.out = append(c.out, msg...)
			case kind == 'Z' && c.done:
				c.dropped.Add(1)
				_ = c.Conn.Close()
				return 0, io.ErrUnexpectedEOF
			default:
				c.holding = true
				c.done = c.done || kind == 'C'
			}
		}
		if len(c.out) > 0 {
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		}
		m, err := c.Conn.Read(buf)
		c.in = append(c.in, buf[:m]...)
		if err != nil {
			return 0, err
		}
	}
}
