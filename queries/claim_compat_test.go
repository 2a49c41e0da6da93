package queries_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// previousClaim is the claim exactly as the previous binary sends it (queries/claim.sql before
// migration 00004): every argument named, p_skip_lock among them.
const previousClaim = `SELECT job_id, server_id, slug, endpoint_url, kind, claimed_next_check_at, reason, requested_at
  FROM probe_claim(p_round_id    => $1,
                   p_invocation  => $2,
                   p_limit       => $3,
                   p_min_spacing => make_interval(secs => $4::float8),
                   p_in_flight   => make_interval(secs => $5::float8),
                   p_now         => $6::timestamptz,
                   p_skip_lock   => $7::boolean)`

// The shipped claim has no switch for its lock any more; the previous binary's call, which names
// p_skip_lock (false), keeps working after the migration so that a rollback to it stays possible,
// and asking it to skip the lock raises.
func TestThePreviousBinarysClaimStillWorksAndCannotSkipTheLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrated.Pool(t)
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
	round := testfactory.Round(ctx, t, pool, nil)

	_, err := pool.Exec(ctx, previousClaim, round, 0, 5, 600.0, 900.0, now, true)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "a claim that asks to skip the lock must raise")
	require.Contains(t, pgErr.Message, "p_skip_lock is gone")

	rows, err := pool.Query(ctx, previousClaim, round, 0, 5, 600.0, 900.0, now, false)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 1, n, "the previous binary's claim takes the due server")
}
