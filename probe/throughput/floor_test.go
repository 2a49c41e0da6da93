package throughput

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
)

// floorRounds is the floor probectl's rounds are measured against: the same servers checked by
// the same checker, each run signed by the same signer, with as many invocations claiming as
// many servers at a time, but writing only the rows a check cannot do without (testdata/floor_*.sql:
// its job opened and closed, its run, its server leased and advanced, each claim and each
// claim's finishes one statement) into tables with no guard: no partitions, foreign keys,
// triggers, open-job queue, spacing or in-flight judgement, rollups, alert state, fencing or
// spool. It says how much of probectl's cost is the rows themselves and how much is what keeps
// them right. It is a floor of the database's work, not of a round's time: each invocation
// finishes a claim's checks together once the last has ended, then claims again (slots wait for
// the claim's slowest check), and stops at its first claim that finds nothing due and unlocked;
// both can only slow it down. Every check must answer ok, as River's jobs must complete. It
// reports servers/s.
func floorRounds(b *testing.B, pool *pgxpool.Pool, s probe.Settings, signer probe.Signer, c probe.Checker, servers int, fleetURL string) measured {
	ctx := context.Background()
	claimSQL, finishSQL := testSQL(b, "floor_claim.sql"), testSQL(b, "floor_finish.sql")
	var elapsed time.Duration
	var cpu cpuUse
	total := 0
	for range b.N {
		b.StopTimer()
		reset(b, pool, servers, fleetURL)
		_, err := pool.Exec(ctx, testSQL(b, "floor_schema.sql"))
		require.NoError(b, err)
		b.StartTimer()
		cpu0 := cpuNow()
		start := time.Now()
		counts := make([]int, s.Fanout+1)
		errs := make([]error, s.Fanout+1)
		var wg sync.WaitGroup
		for inv := range counts {
			wg.Go(func() {
				counts[inv], errs[inv] = floorInvocation(ctx, pool, claimSQL, finishSQL, inv, s.Concurrency, signer, c)
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		cpu = cpu.add(cpuNow().since(cpu0))
		checked := 0
		for inv := range counts {
			require.NoError(b, errs[inv], "floor invocation %d", inv)
			checked += counts[inv]
		}
		require.Equal(b, servers, checked, "every server checked once, ok")
		total += checked
	}
	m := measured{perSecond: float64(total) / elapsed.Seconds(), cpu: cpu, n: total}
	b.ReportMetric(m.perSecond, "servers/s")
	return m
}

// floorRound stands for the round id a real round's runs are signed with (the floor has none).
const floorRound = 1

// floorJob is a server the floor's claim took.
type floorJob struct {
	job, server       int64
	slug, url, kind   string
	lease             time.Time
	result, envelope  json.RawMessage
	outcome           string
	started, finished time.Time
}

// floorInvocation claims up to slots servers at a time until none is due, checks a claim's
// servers at once, signs and finishes them in one statement, and says how many it checked and
// advanced; a check that did not answer ok is an error.
func floorInvocation(ctx context.Context, pool *pgxpool.Pool, claimSQL, finishSQL string, inv, slots int, signer probe.Signer, c probe.Checker) (int, error) {
	n := 0
	for {
		rows, err := pool.Query(ctx, claimSQL, slots)
		if err != nil {
			return n, err
		}
		var jobs []floorJob
		for rows.Next() {
			var j floorJob
			if err := rows.Scan(&j.job, &j.server, &j.slug, &j.url, &j.kind, &j.lease); err != nil {
				rows.Close()
				return n, err
			}
			jobs = append(jobs, j)
		}
		if err := rows.Err(); err != nil {
			return n, err
		}
		if len(jobs) == 0 {
			return n, nil
		}
		var wg sync.WaitGroup
		errs := make([]error, len(jobs))
		for i := range jobs {
			wg.Go(func() {
				j := &jobs[i]
				res := c.Check(ctx, check.Target{ServerID: j.server, Slug: j.slug, URL: j.url, Kind: j.kind})
				if res.Outcome != check.OutcomeOK {
					errs[i] = fmt.Errorf("server %s: %s: %s", j.slug, res.Outcome, res.Error)
					return
				}
				j.envelope, errs[i] = signer.Sign(attest.Run{JobID: j.job, ServerID: j.server, Slug: j.slug, URL: j.url, Kind: j.kind,
					RoundID: floorRound, Invocation: inv, Result: res})
				if errs[i] == nil {
					j.result, errs[i] = json.Marshal(res)
				}
				j.outcome, j.started, j.finished = res.Outcome, res.StartedAt, res.FinishedAt
			})
		}
		wg.Wait()
		cols := struct {
			job, server              []int64
			lease, started, finished []time.Time
			outcome                  []string
			result, envelope         []json.RawMessage
		}{}
		for i, j := range jobs {
			if errs[i] != nil {
				return n, errs[i]
			}
			cols.job, cols.server = append(cols.job, j.job), append(cols.server, j.server)
			cols.lease, cols.outcome = append(cols.lease, j.lease), append(cols.outcome, j.outcome)
			cols.started, cols.finished = append(cols.started, j.started), append(cols.finished, j.finished)
			cols.result, cols.envelope = append(cols.result, j.result), append(cols.envelope, j.envelope)
		}
		tag, err := pool.Exec(ctx, finishSQL, cols.job, cols.server, cols.lease, cols.outcome, cols.started, cols.finished,
			cols.result, cols.envelope)
		if err != nil {
			return n, err
		}
		n += int(tag.RowsAffected())
	}
}
