package queries_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// The rollups and the alerts' judgement per statement (00020) leave every row the row triggers
// left (00007, 00016), whatever the statement holds: the same rounds of checks, finished one at
// a time on a database with the row triggers and in batches on one with the statement triggers
// (and a statement of two runs of one server on both; two rounds finished one at a time on both),
// give the same totals, days, rollups, alert states, tallies, degraded rounds and events. The rounds take servers down and up, change
// tools and auth, fence and interrupt checks, and one is degraded.
func TestTheStatementTriggersLeaveWhatTheRowTriggersLeft(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	before, after := migrated.Pool(t), migrated.Pool(t)
	_, err := before.Exec(ctx, rowTriggers)
	require.NoError(t, err)
	const servers = 12
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	type result struct {
		outcome, tools, version, auth, fault, summary, cert string
	}
	// plan says what server i answers in round r.
	plan := func(r, i int) result {
		res := result{outcome: "ok", summary: "ok", tools: "t1", version: "1.0", auth: "none"}
		switch {
		case r == 5 && i < 8: // the degraded round: 8 of 12 fail
			res.outcome, res.summary = "failed", "failed"
		case i == 1 && (r == 1 || r == 2): // down, then recovered in round 3
			res.outcome, res.summary = "failed", "failed"
		case i == 2 && r >= 2:
			res.tools = "t2" // tools changed without a version bump
		case i == 3 && r >= 2:
			res.auth = "oauth"
		case i == 4 && r == 1:
			res.outcome, res.fault, res.summary = "error", "probectl", "fenced"
		case i == 4 && r == 2:
			res.outcome, res.summary = "error", "interrupted"
		case i == 5 && r == 2:
			res.outcome, res.summary = "error", "error"
		case i == 6:
			res.cert = base.AddDate(0, 0, 30+r).Format(time.RFC3339)
		case i == 7 && r == 3:
			res.tools = "" // an answer without tools
		}
		return res
	}
	body := func(res result) json.RawMessage {
		m := map[string]any{"outcome": res.outcome, "summary": res.summary, "requests": []any{}, "auth": res.auth}
		if res.tools != "" {
			m["tools_fingerprint"], m["server_version"] = res.tools, res.version
		}
		if res.fault != "" {
			m["fault"] = res.fault
		}
		if res.cert != "" {
			m["requests"] = []any{map[string]any{"tls": map[string]any{"cert_not_after": res.cert}}}
		}
		raw, _ := json.Marshal(m)
		return raw
	}
	pools := []*pgxpool.Pool{before, after}
	ids := make([][]int64, 2)
	for k, pool := range pools {
		_, err := pool.Exec(ctx, `INSERT INTO alert_receivers (name, url, format, events) VALUES ('all', 'http://127.0.0.1:9/',
			'standard-webhooks', ARRAY['server.down','server.recovered','server.tools_changed','server.auth_changed','prober.degraded'])`)
		require.NoError(t, err)
		for i := range servers {
			ids[k] = append(ids[k], testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("s%d", i)}))
		}
	}
	require.Equal(t, ids[0], ids[1])
	for r := 1; r <= 6; r++ {
		at := base.Add(time.Duration(r) * time.Hour)
		for k, pool := range pools {
			round := testfactory.Round(ctx, t, pool, nil)
			var ps []queries.FinishParams
			for i, srv := range ids[k] {
				requested := at.Add(-time.Minute)
				job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round, RequestedAt: &requested})
				res := plan(r, i)
				started := at.Add(time.Duration(i) * time.Second)
				ps = append(ps, queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: at, Outcome: res.outcome,
					StartedAt: started, CheckFinishedAt: started.Add(time.Duration(i*100) * time.Millisecond), Requests: 1,
					Result: body(res), Now: &at, RequestedAt: &requested, Kind: "http"})
			}
			if k == 0 || r == 3 || r == 6 { // rounds 3 and 6: one finish a statement on both
				for _, p := range ps {
					_, err := queries.FinishTx(ctx, pool, p)
					require.NoError(t, err)
				}
			} else {
				// in two batches (run ids come out as above)
				for _, part := range [][]queries.FinishParams{ps[:servers/2], ps[servers/2:]} {
					out, err := queries.FinishBatch(ctx, pool, part)
					require.NoError(t, err)
					for _, o := range out {
						require.NoError(t, o.Err)
					}
				}
			}
			if r == 4 {
				// Two runs of one server in one statement (a spool replayed by hand, say): each is
				// judged in order, seeing what the one before left.
				twice := at.Add(10 * time.Minute)
				var jobs []int64
				for _, i := range []int{1, 1, 9, 9} {
					jobs = append(jobs, testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: ids[k][i], RoundID: &round,
						RequestedAt: &twice, FinishedAt: &twice}))
				}
				_, err := pool.Exec(ctx, `INSERT INTO probe_runs (job_id, job_requested_at, server_id, started_at, finished_at, requests, result)
					SELECT j, $2, s, $3::timestamptz + make_interval(secs => n), $3::timestamptz + make_interval(secs => n + 1), 1,
					       jsonb_build_object('outcome', o, 'summary', o, 'requests', '[]'::jsonb)
					  FROM unnest($1::bigint[], $4::bigint[], ARRAY['failed', 'failed', 'ok', 'ok'], ARRAY[1, 2, 3, 4])
					       AS u(j, s, o, n)`, jobs, twice, twice, []int64{ids[k][1], ids[k][1], ids[k][9], ids[k][9]})
				require.NoError(t, err)
			}
			_, err := queries.FinishRound(ctx, pool, round, nil)
			require.NoError(t, err)
		}
	}
	// Then the runs the statement trigger judges in one UPDATE besides an ok check of a server up
	// (00020's fast paths), between runs that change a state: failures counted with no round
	// (below down_after; of a server down already), ok checks of a server down that do not reach
	// up_after (2 now), failures held by a running round and an ok check superseding its own
	// round's held failure (a second job of that round).
	for k, pool := range pools {
		_, err := pool.Exec(ctx, "UPDATE alert_policy SET up_after = 2")
		require.NoError(t, err)
		round, storm := testfactory.Round(ctx, t, pool, nil), testfactory.Round(ctx, t, pool, nil)
		held, later := testfactory.Round(ctx, t, pool, nil), testfactory.Round(ctx, t, pool, nil)
		steps := []struct {
			round  *int64
			only   []int // the servers checked (nil: all)
			failed []int // the servers that fail; the others answer ok
			finish bool  // the round is finished after the step
		}{
			{nil, nil, []int{0, 1, 2, 3, 4, 5}, false},         // counted, below down_after
			{nil, nil, []int{0, 1}, false},                     // down (one at a time); 2..5 ok after a failure
			{nil, nil, []int{0}, false},                        // 0 down already; 1 ok but still down (up_after 2)
			{&round, nil, []int{2, 3}, false},                  // held by the running round
			{&round, nil, []int{3}, true},                      // 2 ok in its own round; 3's held failure replaced; 1 recovers
			{&round, []int{4, 5}, []int{4, 5}, false},          // counted: their round is over (not degraded)
			{&storm, nil, []int{0, 1, 2, 3, 4, 5, 6, 7}, true}, // degraded
			{&storm, []int{4, 8}, []int{4, 8}, false},          // failures of a degraded round, over: not counted
			{&held, []int{9, 11}, []int{9, 11}, false},         // held by a round that stays running
			{&held, []int{11}, nil, false},                     // 11 ok in that round: its held failure superseded
			{&later, []int{9, 10}, []int{9}, false},            // a failure held from another round is settled first
			{&round, []int{10}, []int{10}, false},              // counted (its round is over), the server's last run
		}
		for n, st := range steps {
			at := base.Add(7*time.Hour + time.Duration(n)*10*time.Minute)
			var ps []queries.FinishParams
			for i, srv := range ids[k] {
				if st.only != nil && !slices.Contains(st.only, i) {
					continue
				}
				res := result{outcome: "ok", summary: "ok", tools: "t1", version: "1.0", auth: "none"}
				switch {
				case slices.Contains(st.failed, i):
					res.outcome, res.summary = "failed", "failed"
				case i == 2:
					res.tools = "t2"
				case i == 3:
					res.auth = "oauth"
				}
				requested := at.Add(-time.Minute)
				job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: st.round, RequestedAt: &requested})
				started := at.Add(time.Duration(i) * time.Second)
				ps = append(ps, queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: at, Outcome: res.outcome,
					StartedAt: started, CheckFinishedAt: started.Add(time.Second), Requests: 1, Result: body(res), Now: &at,
					RequestedAt: &requested, Kind: "http"})
			}
			if k == 0 {
				for _, p := range ps {
					_, err := queries.FinishTx(ctx, pool, p)
					require.NoError(t, err)
				}
			} else {
				out, err := queries.FinishBatch(ctx, pool, ps)
				require.NoError(t, err)
				for _, o := range out {
					require.NoError(t, o.Err)
				}
			}
			if st.finish {
				_, err := queries.FinishRound(ctx, pool, *st.round, nil)
				require.NoError(t, err)
			}
		}
		// Last, a failure of server 8 a month back (a statement of its own: the row path on both),
		// then one statement of a run out of order (server 10's, a failure started before the run
		// that is its rollup's last: a replayed spool) and runs in order (servers 11 and 8): the
		// first counts in its day and its uptime, but does not replace the last run; the others do,
		// and server 8's month-old failure falls outside its 30 days.
		monthBack, outOfOrder, inOrder := base.AddDate(0, 0, -31), base.Add(7*time.Hour), base.Add(9*time.Hour)
		storeRuns(ctx, t, pool, []int64{ids[k][8]}, []time.Time{monthBack}, []string{"failed"})
		storeRuns(ctx, t, pool, []int64{ids[k][10], ids[k][11], ids[k][8]}, []time.Time{outOfOrder, inOrder, inOrder},
			[]string{"failed", "ok", "ok"})
	}
	tables := []struct{ name, query string }{
		{"run_totals", `SELECT kind, outcome, shard, runs, round(seconds_sum::numeric, 6), buckets FROM run_totals ORDER BY 1, 2, 3`},
		{"server_run_days", `SELECT server_id, day, ok, counted FROM server_run_days ORDER BY 1, 2`},
		{"server_rollups", `SELECT server_id, last_run_id, last_run_at, last_outcome, failing_since, uptime_30d, cert_not_after
			FROM server_rollups ORDER BY 1`},
		{"alert_states", `SELECT server_id, state, consecutive_ok, consecutive_failed, streak_runs, held_round_id, held_run_id,
			last_run_id, last_run_at, tools_fingerprint, server_version, auth, open_event_id IS NULL FROM alert_states ORDER BY 1`},
		{"alert_round_tallies", `SELECT round_id, kind, outcome, shard, runs FROM alert_round_tallies ORDER BY 1, 2, 3, 4`},
		{"alert_degraded_rounds", `SELECT round_id, checked, failed FROM alert_degraded_rounds ORDER BY 1`},
		{"alert_events", `SELECT type, server_id, state, previous_state, runs, round_id, data - 'down_event_id', 
			CASE WHEN server_id IS NULL THEN NULL ELSE created_at END, resolved_at, resolved_by IS NULL FROM alert_events ORDER BY seq`},
		{"alert_deliveries", `SELECT e.type, e.server_id, d.receiver_id FROM alert_deliveries AS d JOIN alert_events AS e ON e.id = d.event_id ORDER BY e.seq`},
	}
	for _, tb := range tables {
		got := make([]string, 2)
		for k, pool := range pools {
			rows, err := pool.Query(ctx, tb.query)
			require.NoError(t, err)
			vals, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
				v, err := row.Values()
				return fmt.Sprint(v), err
			})
			require.NoError(t, err)
			require.NotEmpty(t, vals, tb.name)
			got[k] = fmt.Sprint(vals)
		}
		require.Equal(t, got[0], got[1], "%s: row triggers (first) and statement triggers (second) differ", tb.name)
	}
	var types []string
	require.NoError(t, after.QueryRow(ctx, "SELECT array_agg(DISTINCT type ORDER BY type) FROM alert_events").Scan(&types))
	require.Equal(t, []string{"prober.degraded", "server.auth_changed", "server.down", "server.recovered", "server.tools_changed"}, types)
}

// 00020 rolls back to the row triggers and forth again, and a finish works on either side.
func TestTheSetFinishMigrationRollsBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, p := upOnEmptyDB(t)
	perRow := func() (rows int) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_trigger
			WHERE tgrelid = 'probe_runs'::regclass AND tgname IN ('probe_runs_alert', 'probe_runs_rollup') AND tgtype & 1 = 1`).Scan(&rows))
		return rows
	}
	// The claim each side's binary sends: below 00021 this binary's probe_claim_due is not there
	// yet, and the binary that runs there claims with probe_claim_lease.
	finishes := func(previous bool) {
		var j queries.ClaimedJob
		if previous {
			testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{NextCheckAt: ago(time.Hour)})
			jobs := claimAsPreviousLeasing(t, pool, testfactory.Round(ctx, t, pool, nil), 1, &now)
			require.Len(t, jobs, 1)
			j = jobs[0]
		} else {
			j, _ = claimOne(t, pool)
		}
		r, err := queries.FinishTx(ctx, pool, finishParams(j, now.Add(time.Second)))
		require.NoError(t, err)
		require.True(t, r.JobFinished)
		var rollups int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM server_rollups WHERE server_id = $1", j.ServerID).Scan(&rollups))
		require.Equal(t, 1, rollups)
	}
	require.Zero(t, perRow(), "per statement")
	finishes(false)
	_, err := p.DownTo(ctx, finishSetVersion-1)
	require.NoError(t, err)
	require.Equal(t, 2, perRow(), "per row again")
	finishes(true)
	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.Zero(t, perRow())
	finishes(false)
}

const finishSetVersion = 20
