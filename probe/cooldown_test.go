package probe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

// An invocation claims for its free slots together rather than one server per freed slot: with
// its cool-down made longer than the round, it claims only when half its slots are free, so a
// round of one invocation, 20 checks at a time, takes 200 servers in at most 1 + 180/10 claims
// (one per freed slot, as before the cool-down, made 181).
func TestAnInvocationClaimsForItsFreeSlotsTogether(t *testing.T) {
	t.Parallel()
	rec := newCallRecorder("Claim")
	pool := migrated.Pool(t, dbtest.MaxConns(8), dbtest.Tracer(rec))
	const servers = 200
	dueServers(t, pool, servers)
	s := testSettings(FinishTx)
	s.Fanout, s.Concurrency, s.ClaimLimit = 0, 20, servers
	r := &Round{DB: pool, Settings: s, Checker: &okChecker{}, testKnobs: testKnobs{claimCooldown: time.Hour}}
	sum, err := r.Run(t.Context())
	require.NoError(t, err)
	require.Equal(t, servers, sum.Runs)
	require.Equal(t, servers, sum.Servers)
	// The last claim may come back empty.
	require.LessOrEqual(t, len(rec.calls), 1+(servers-20)/10+1, "claims: %d for %d servers", len(rec.calls), servers)
}
