package queries_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// previousLeasingClaim is the claim exactly as the binary before migration 00021 sends it
// (queries/claim.sql then): probe_claim_lease, which closes abandoned jobs in every claim.
const previousLeasingClaim = `SELECT c.job_id, c.server_id, c.slug, c.endpoint_url, c.kind, c.transport, c.due_at,
       c.claimed_next_check_at, c.reason, c.requested_at
  FROM probe_claim_lease(p_round_id    => $1,
                         p_invocation  => $2,
                         p_limit       => $3,
                         p_min_spacing => $4::interval,
                         p_in_flight   => $5::interval,
                         p_now         => $6::timestamptz) AS c`

func claimAsPreviousLeasing(t *testing.T, db queries.DBTX, round int64, limit int, at *time.Time) []queries.ClaimedJob {
	t.Helper()
	rows, err := db.Query(context.Background(), previousLeasingClaim, round, 1, limit, time.Duration(0), queries.InFlightWindow, at)
	require.NoError(t, err)
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByName[queries.ClaimedJob])
	require.NoError(t, err)
	return jobs
}

// During a rolling deploy the previous binary's leasing claim (probe_claim_lease, which still
// sweeps abandoned jobs itself) and this binary's probe_claim_due claim from the same servers at
// once: no server is claimed twice, and the previous claim still takes over an abandoned job.
func TestThePreviousLeasingClaimAndProbeClaimDueClaimEachServerOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	const servers = 60
	for range servers {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	}
	var rounds []int64
	var wg sync.WaitGroup
	for i := range 4 {
		round := testfactory.Round(ctx, t, pool, nil)
		rounds = append(rounds, round)
		previous := i%2 == 0
		wg.Go(func() {
			for range servers {
				var jobs []queries.ClaimedJob
				if previous {
					jobs = claimAsPreviousLeasing(t, pool, round, 3, nil)
				} else {
					var err error
					jobs, err = queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 3})
					if !assert.NoError(t, err) {
						return
					}
				}
				for _, j := range jobs {
					finishAt(t, pool, j.JobID, j.ServerID, j.ClaimedNextCheckAt, nil)
				}
				if len(jobs) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	jobs, err := queries.ListRoundJobs(ctx, pool, rounds...)
	require.NoError(t, err)
	require.Len(t, jobs, servers, "every server claimed once")
	seen := map[int64]bool{}
	for _, j := range jobs {
		require.False(t, seen[j.ServerID], "server %d claimed twice", j.ServerID)
		seen[j.ServerID] = true
	}

	// An abandoned job: the previous claim closes it itself and takes the server over.
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Minute)})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: ago(queries.InFlightWindow + time.Minute)})
	next, err := queries.Claim(ctx, pool, queries.ClaimParams{RoundID: rounds[1], Limit: 5, Now: &now})
	require.NoError(t, err)
	require.Empty(t, next, "probe_claim_due leaves an abandoned job to a round's start")
	took := claimAsPreviousLeasing(t, pool, rounds[0], 5, &now)
	require.Len(t, took, 1)
	require.Equal(t, server, took[0].ServerID)
}
