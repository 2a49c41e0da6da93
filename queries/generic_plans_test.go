package queries_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// 00025 rolls back and forth: after it, the claim and probe_runs_once run their statements on
// their generic plans (planned once per session, not on every call) with enable_seqscan off, and
// the batched finish as 00023 left it; before it, neither does; a claim and a finish work on either side. That the generic plans are good ones is held by the
// plan tests, which run the claim and the finish as shipped (queries/claim_plan_test.go: the
// claim judges what it locks and reads no partition of the coming days; finish_plan_test.go).
func TestTheGenericPlansMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	// Each function's settings, whole: a later CREATE OR REPLACE that dropped one would show.
	settings := func() map[string][]string {
		rows, err := pool.Query(ctx, `SELECT p.proname, coalesce(p.proconfig, '{}') FROM pg_proc AS p
			WHERE p.pronamespace = 'public'::regnamespace
			  AND p.proname IN ('probe_claim_due', 'probe_runs_once', 'probe_finish_many')`)
		require.NoError(t, err)
		got := map[string][]string{}
		for rows.Next() {
			var n string
			var c []string
			require.NoError(t, rows.Scan(&n, &c))
			got[n] = c
		}
		require.NoError(t, rows.Err())
		return got
	}
	want := map[string][]string{
		"probe_claim_due": {"jit=off", "plan_cache_mode=force_generic_plan", "enable_seqscan=off"},
		"probe_runs_once": {"plan_cache_mode=force_generic_plan", "enable_seqscan=off"},
		// 00029's setting, which probe_runs_once's WHEN reads
		"probe_finish_many": {"jit=off", "probectl.runs_once=checked"},
	}
	require.Equal(t, want, settings())
	claimAndFinishOne(t, pool)
	_, err := p.DownTo(ctx, genericPlansVersion-1)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"probe_claim_due": {"jit=off"}, "probe_runs_once": {},
		"probe_finish_many": {"jit=off"}}, settings(), "as 00024 left them")
	claimAndFinishOne(t, pool)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, want, settings())
	claimAndFinishOne(t, pool)
}

const genericPlansVersion = 25
