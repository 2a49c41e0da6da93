package queries_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// rowTriggers puts back the row triggers of 00007 and 00016 (the finish before 00020): what a
// database before this release ran on every run.
const rowTriggers = `
DROP TRIGGER probe_runs_alert ON probe_runs;
CREATE TRIGGER probe_runs_alert AFTER INSERT ON probe_runs FOR EACH ROW EXECUTE FUNCTION probe_runs_alert();
DROP TRIGGER probe_runs_rollup ON probe_runs;
CREATE TRIGGER probe_runs_rollup AFTER INSERT ON probe_runs FOR EACH ROW EXECUTE FUNCTION probe_runs_rollup();`

// finishTxBatchBefore is the batch finish before 00020 (FinishTxBatch): one probe_finish per job,
// sent together in one transaction, in the rollup rows' order.
func finishTxBatchBefore(ctx context.Context, db *pgxpool.Pool, ps []queries.FinishParams) error {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b queries.FinishParams) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Outcome, b.Outcome),
			cmp.Compare(a.ServerID%16, b.ServerID%16), cmp.Compare(a.JobID, b.JobID))
	})
	return queries.InTx(ctx, db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, p := range ps {
			b.Queue(queries.SQL("FinishTx"), queries.FinishTxArgs(p))
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// BenchmarkFinishCost measures a finish before 00020 (probe_finish per job, row triggers) and after
// (probe_finish_many, statement triggers), side by side in one run: each arm has its own database
// and the arms take turns finish by finish, so that a shared machine's load falls on all alike.
// Alone: one finish per transaction (FinishTx; the previous binary's, and the alerts' figure of
// docs/alerts.md), with the alerts' trigger, without it, and with no trigger at all (the triggers'
// share). Batch: the completer's batch of -batch jobs. One check in 20 fails; one receiver takes
// the transitions; every server was finished once before the timing (its states exist).
//
//	go test -run '^$' -bench BenchmarkFinishCost -benchtime 200x ./queries/
func BenchmarkFinishCost(b *testing.B) { finishCost(b, 100, nil) }

// BenchmarkFinishBatchCap measures the longest batch of queries.MaxFinishBatch finishes, before
// 00020 and after, to judge the cap against one write's budget (probe's finishBudgets: 10 s).
// Run it with the machine loaded (stress-ng --cpu 2 beside it).
//
//	go test -run '^$' -bench BenchmarkFinishBatchCap -benchtime 20x ./queries/
func BenchmarkFinishBatchCap(b *testing.B) {
	finishCost(b, queries.MaxFinishBatch, []string{"batch-before", "batch-after"})
}

func finishCost(b *testing.B, batch int, only []string) {
	const servers = 500
	ctx := context.Background()
	ok, _ := json.Marshal(map[string]any{"outcome": "ok", "summary": "ok", "requests": []any{}})
	failed, _ := json.Marshal(map[string]any{"outcome": "failed", "summary": "failed", "requests": []any{}})
	type arm struct {
		name     string
		before   bool     // the row triggers of before 00020
		disable  []string // triggers disabled
		batch    bool
		pool     *pgxpool.Pool
		ids      []int64
		round    int64
		spent    time.Duration
		longest  time.Duration
		finishes int
		wal      int64 // bytes of WAL written by its finishes
	}
	both := []string{"probe_runs_alert", "probe_runs_rollup"}
	arms := []*arm{
		{name: "alone-before", before: true},
		{name: "alone-after"},
		{name: "alone-before-no-alerts", before: true, disable: []string{"probe_runs_alert"}},
		{name: "alone-after-no-alerts", disable: []string{"probe_runs_alert"}},
		{name: "alone-no-triggers", disable: both},
		{name: "batch-before", before: true, batch: true},
		{name: "batch-after", batch: true},
		{name: "batch-after-no-alerts", batch: true, disable: []string{"probe_runs_alert"}},
		{name: "batch-before-no-triggers", before: true, batch: true, disable: both},
		{name: "batch-no-triggers", batch: true, disable: both},
	}
	if only != nil {
		arms = slices.DeleteFunc(arms, func(a *arm) bool { return !slices.Contains(only, a.name) })
	}
	jobs := func(a *arm, srvs []int64) []queries.FinishParams {
		rows, err := a.pool.Query(ctx, `INSERT INTO probe_jobs (server_id, round_id, invocation, reason, requested_at)
			SELECT s, $2, 0, 'scheduled', now() FROM unnest($1::bigint[]) AS s RETURNING id, server_id, requested_at`, srvs, a.round)
		if err != nil {
			b.Fatal(err)
		}
		var ps []queries.FinishParams
		now := time.Now().UTC()
		for rows.Next() {
			p := queries.FinishParams{ClaimedNextCheckAt: now, Outcome: "ok", Result: ok, StartedAt: now,
				CheckFinishedAt: now, Requests: 1, Kind: "http", RequestedAt: new(time.Time)}
			if err := rows.Scan(&p.JobID, &p.ServerID, p.RequestedAt); err != nil {
				b.Fatal(err)
			}
			ps = append(ps, p)
		}
		if rows.Err() != nil {
			b.Fatal(rows.Err())
		}
		return ps
	}
	finish := func(a *arm, ps []queries.FinishParams) {
		var err error
		switch {
		case !a.batch:
			for _, p := range ps {
				if _, err = queries.FinishTx(ctx, a.pool, p); err != nil {
					break
				}
			}
		case a.before:
			err = finishTxBatchBefore(ctx, a.pool, ps)
		default:
			var out []queries.BatchFinish
			out, err = queries.FinishBatch(ctx, a.pool, ps)
			for _, o := range out {
				err = cmp.Or(err, o.Err)
			}
		}
		if err != nil {
			b.Fatalf("%s: %v", a.name, err)
		}
	}
	for _, a := range arms {
		a.pool = migrated.Pool(b)
		if a.before {
			if _, err := a.pool.Exec(ctx, rowTriggers); err != nil {
				b.Fatal(err)
			}
		}
		for _, trig := range a.disable {
			if _, err := a.pool.Exec(ctx, "ALTER TABLE probe_runs DISABLE TRIGGER "+trig); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := a.pool.Exec(ctx, `INSERT INTO alert_receivers (name, url, format, events)
			VALUES ('bench', 'http://127.0.0.1:9/', 'slack', ARRAY['server.down','server.recovered'])`); err != nil {
			b.Fatal(err)
		}
		a.ids = make([]int64, servers)
		for i := range a.ids {
			a.ids[i] = testfactory.Server(ctx, b, a.pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("bench-%d", i)})
		}
		a.round = testfactory.Round(ctx, b, a.pool, nil)
		finish(a, jobs(a, a.ids)) // every server's states exist
		if _, err := a.pool.Exec(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 1
		for k := range arms {
			a := arms[(i+k)%len(arms)] // each arm goes first in turn
			if a.batch {
				n = batch
			} else {
				n = 1
			}
			srvs := make([]int64, n)
			for s := range srvs {
				srvs[s] = a.ids[(i*n+s)%servers]
			}
			b.StopTimer()
			ps := jobs(a, srvs)
			for s := range ps {
				if (i*n+s)%20 == 0 {
					ps[s].Outcome, ps[s].Result = "failed", failed
				}
			}
			var lsn string
			if err := a.pool.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			finish(a, ps)
			took := time.Since(start)
			b.StopTimer()
			var wal int64
			if err := a.pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&wal); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			a.spent += took
			a.longest = max(a.longest, took)
			a.wal += wal
			a.finishes += len(ps)
		}
	}
	per := map[string]float64{}
	for _, a := range arms {
		per[a.name] = float64(a.spent.Nanoseconds()) / float64(a.finishes)
		b.ReportMetric(per[a.name], "ns/"+a.name)
		b.ReportMetric(float64(a.wal)/float64(a.finishes), "walB/"+a.name)
		if a.batch {
			b.ReportMetric(float64(a.longest.Milliseconds()), "max-ms/"+a.name)
		}
	}
	ratio := func(x, y string) float64 { return per[x] / per[y] }
	if only != nil {
		b.ReportMetric(ratio("batch-after", "batch-before"), "batch-after/before")
		return
	}
	b.ReportMetric(ratio("alone-before", "alone-before-no-alerts"), "outbox-ratio-before")
	b.ReportMetric(ratio("alone-after", "alone-after-no-alerts"), "outbox-ratio-after")
	b.ReportMetric(ratio("alone-after", "alone-before"), "alone-after/before")
	b.ReportMetric(ratio("batch-after", "batch-before"), "batch-after/before")
	b.ReportMetric(ratio("batch-after", "batch-after-no-alerts"), "outbox-ratio-batch-after")
	b.ReportMetric(1-ratio("alone-no-triggers", "alone-before"), "trigger-share-alone-before")
	b.ReportMetric(1-ratio("alone-no-triggers", "alone-after"), "trigger-share-alone-after")
	b.ReportMetric(1-ratio("batch-before-no-triggers", "batch-before"), "trigger-share-batch-before")
	b.ReportMetric(1-ratio("batch-no-triggers", "batch-after"), "trigger-share-batch-after")
}
