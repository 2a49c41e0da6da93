package queries_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// 00026 rolls back and forth: after it servers_due_idx is gone, before it (the previous binary's
// schema) it is back; a claim and a finish work on either side.
func TestTheClaimWalkIndexMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	indexes := func() []string {
		var names []string
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(array_agg(indexname::text ORDER BY indexname), '{}')
			FROM pg_indexes WHERE tablename = 'servers' AND indexname LIKE 'servers_due%'`).Scan(&names))
		return names
	}
	require.Equal(t, []string{"servers_due_order_idx"}, indexes())
	claimAndFinishOne(t, pool)
	_, err := p.DownTo(ctx, claimWalkIndexVersion-1)
	require.NoError(t, err)
	require.Equal(t, []string{"servers_due_idx", "servers_due_order_idx"}, indexes(), "as 00025 left them")
	claimAndFinishOne(t, pool)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"servers_due_order_idx"}, indexes())
	claimAndFinishOne(t, pool)
}

const claimWalkIndexVersion = 26

// 00027 rolls back and forth: after it the claim reads the open-job queue by key lookups in
// subqueries, before it as 00024 wrote it; the claim keeps 00025's settings on both sides, and a
// claim and a finish work on either side.
func TestTheClaimQueueLookupsMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	state := func() (settings []string, scalar bool) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(proconfig, '{}'),
			prosrc LIKE '%(SELECT busy.job_id FROM probe_open_jobs AS busy WHERE busy.server_id = s.id LIMIT 1) IS NULL%'
			FROM pg_proc WHERE proname = 'probe_claim_due' AND pronamespace = 'public'::regnamespace`).Scan(&settings, &scalar))
		return settings, scalar
	}
	want := []string{"jit=off", "plan_cache_mode=force_generic_plan", "enable_seqscan=off"}
	settings, scalar := state()
	require.Equal(t, want, settings)
	require.True(t, scalar, "the open-job check, a subquery per server")
	claimAndFinishOne(t, pool)
	_, err := p.DownTo(ctx, claimQueueLookupsVersion-1)
	require.NoError(t, err)
	settings, scalar = state()
	require.Equal(t, want, settings, "as 00025 left them")
	require.False(t, scalar, "00024's NOT EXISTS")
	claimAndFinishOne(t, pool)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	settings, scalar = state()
	require.Equal(t, want, settings)
	require.True(t, scalar)
	claimAndFinishOne(t, pool)
}

const claimQueueLookupsVersion = 27
