package alerts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// BenchmarkFinish measures one finish (probe_finish, its own transaction) with the alerts'
// trigger and without it (disabled on a second database), interleaved finish by finish so that the
// load of a shared machine falls on both alike: it reports ns/finish of each and their ratio
// (docs/alerts.md). One check in 20 fails, as on a normal day; one receiver takes the transitions.
// Each server is finished once before the timing, so its alert state exists, as it does in steady
// state.
//
//	go test -run '^$' -bench BenchmarkFinish -benchtime 3000x ./internal/alerts/
func BenchmarkFinish(b *testing.B) {
	ctx := context.Background()
	type side struct {
		pool  *pgxpool.Pool
		ids   []int64
		round int64
		spent time.Duration
	}
	const servers = 500
	ok, _ := json.Marshal(map[string]any{"outcome": "ok", "summary": "ok", "requests": []any{}})
	failed, _ := json.Marshal(map[string]any{"outcome": "failed", "summary": "failed", "requests": []any{}})
	sides := make([]*side, 2) // 0: with the outbox, 1: without
	for k := range sides {
		sd := &side{pool: migrated.Pool(b), ids: make([]int64, servers)}
		if k == 1 {
			if _, err := sd.pool.Exec(ctx, `ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_alert`); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := sd.pool.Exec(ctx, `INSERT INTO alert_receivers (name, url, format, events)
			VALUES ('bench', 'http://127.0.0.1:9/', 'slack', ARRAY['server.down','server.recovered'])`); err != nil {
			b.Fatal(err)
		}
		for i := range sd.ids {
			sd.ids[i] = testfactory.Server(ctx, b, sd.pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("bench-%d", i)})
		}
		sd.round = testfactory.Round(ctx, b, sd.pool, nil)
		for _, srv := range sd.ids {
			job := testfactory.Job(ctx, b, sd.pool, &testfactory.JobOpts{ServerID: srv, RoundID: &sd.round})
			benchFinish(ctx, b, sd.pool, job, srv, "ok", ok)
		}
		sides[k] = sd
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, outcome := ok, "ok"
		if (i/servers+i)%20 == 0 {
			res, outcome = failed, "failed"
		}
		for k := range sides {
			sd := sides[(i+k)%2] // alternate which goes first
			srv := sd.ids[i%servers]
			job := testfactory.Job(ctx, b, sd.pool, &testfactory.JobOpts{ServerID: srv, RoundID: &sd.round})
			start := time.Now()
			benchFinish(ctx, b, sd.pool, job, srv, outcome, res)
			sd.spent += time.Since(start)
		}
	}
	with := float64(sides[0].spent.Nanoseconds()) / float64(b.N)
	without := float64(sides[1].spent.Nanoseconds()) / float64(b.N)
	b.ReportMetric(with, "ns/finish-outbox")
	b.ReportMetric(without, "ns/finish-without")
	b.ReportMetric(with/without, "ratio")
}

func benchFinish(ctx context.Context, b testing.TB, pool *pgxpool.Pool, job, srv int64, outcome string, res []byte) {
	now := time.Now().UTC()
	if _, err := queries.FinishTx(ctx, pool, queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: now,
		Outcome: outcome, StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: res, Kind: "http"}); err != nil {
		b.Fatal(err)
	}
}
