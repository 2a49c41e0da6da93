package queries_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// 00028 rolls back and forth: after it the rollups' statement trigger writes a server's uptime in
// the upsert of its last run, before it (00023's body) in an UPDATE of its own; on either side a
// statement of runs leaves each server its last run and its uptime, and the trigger keeps its
// jit setting. What the two bodies leave is held equal to the row trigger's by
// TestTheStatementTriggersLeaveWhatTheRowTriggersLeft.
func TestTheRollupUptimeMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	state := func() (settings []string, once bool) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(proconfig, '{}'), prosrc LIKE '%uptime_30d     = EXCLUDED.uptime_30d%'
			FROM pg_proc WHERE proname = 'probe_runs_rollup_batch' AND pronamespace = 'public'::regnamespace`).Scan(&settings, &once))
		return settings, once
	}
	a := testfactory.Server(ctx, t, pool, nil)
	b := testfactory.Server(ctx, t, pool, nil)
	at := time.Now().UTC().Truncate(time.Second)
	// runs stores one statement of two runs (the statement trigger's path), a's ok, b's failed,
	// and says each server's last run and uptime.
	runs := func() {
		t.Helper()
		at = at.Add(time.Minute)
		ja := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: a, RequestedAt: &at, FinishedAt: &at})
		jb := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: b, RequestedAt: &at, FinishedAt: &at})
		var runIDs []int64
		rows, err := pool.Query(ctx, `INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result)
			SELECT j, $2, s, $2, $2, 1, jsonb_build_object('outcome', o, 'summary', o, 'requests', '[]'::jsonb)
			  FROM unnest($1::bigint[], $3::bigint[], ARRAY['ok', 'failed']) AS u(j, s, o)
			RETURNING id`, []int64{ja, jb}, at, []int64{a, b})
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			runIDs = append(runIDs, id)
		}
		require.NoError(t, rows.Err())
		require.Len(t, runIDs, 2)
		var last []int64
		var uptime []float64
		require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(last_run_id ORDER BY server_id), array_agg(uptime_30d ORDER BY server_id)
			FROM server_rollups WHERE server_id IN ($1, $2)`, a, b).Scan(&last, &uptime))
		require.ElementsMatch(t, runIDs, last)
		require.Equal(t, []float64{1, 0}, uptime, "a always ok, b always failed")
	}
	settings, once := state()
	require.Equal(t, []string{"jit=off"}, settings)
	require.True(t, once, "the uptime in the rollup's upsert")
	runs()
	_, err := p.DownTo(ctx, rollupUptimeVersion-1)
	require.NoError(t, err)
	settings, once = state()
	require.Equal(t, []string{"jit=off"}, settings, "as 00023 left them")
	require.False(t, once, "00023's UPDATE")
	runs()
	_, err = p.Up(ctx)
	require.NoError(t, err)
	settings, once = state()
	require.Equal(t, []string{"jit=off"}, settings)
	require.True(t, once)
	runs()
}

const rollupUptimeVersion = 28
