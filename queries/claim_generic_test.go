package queries_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// openJobsBySeqScan matches a plan node that reads the open jobs by a Seq Scan.
var openJobsBySeqScan = regexp.MustCompile(`(?m)^.*Seq Scan on probe_open_jobs\b.*$`)

// A server with an open job is never claimable; the claim passes over such servers without
// locking them (migrations/00024_claim_lock_first.sql). Found in review: a claim of 5 behind 4,000
// servers whose jobs were abandoned (due once their lease ended, until the next round's sweep closes
// their jobs) locked and judged them 5 at a time, 800 statements, holding them from their finishes
// (1.17 s a claim against 32 ms before the claim locked first). It takes one pass.
func TestASmallClaimPassesOverServersWithOpenJobsInOnePass(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	dueServers(t, url, 5000)
	other := dbtest.Pool(t, url)
	round := testfactory.Round(ctx, t, other, nil)
	past := time.Now().Add(-20 * time.Minute)
	jobs, err := queries.Claim(ctx, other, queries.ClaimParams{RoundID: round, Limit: 4000, MinSpacing: 10 * time.Minute, Now: &past})
	require.NoError(t, err)
	require.Len(t, jobs, 4000) // leased until 5 minutes ago: due again, their jobs open (abandoned)
	_, err = other.Exec(ctx, `UPDATE servers SET next_check_at = now() - interval '1 minute'
		WHERE id NOT IN (SELECT server_id FROM probe_open_jobs); ANALYZE`)
	require.NoError(t, err)

	pool, plans := explainedPool(t, url, false)
	var got []queries.ClaimedJob
	logged := plans(func() {
		got, err = queries.Claim(ctx, pool, queries.ClaimParams{RoundID: round, Limit: 5, MinSpacing: 10 * time.Minute})
		require.NoError(t, err)
	})
	require.Len(t, got, 5)
	passes := 0
	for _, p := range logged {
		if strings.Contains(p, "WITH locked AS") {
			passes++
		}
	}
	require.Equal(t, 1, passes, "a claim of 5 behind 4,000 servers with open jobs")
}

// queueNode matches a plan node that reads the open jobs, with its actual rows and loops and, on
// the lines after it, the rows its filter removed (per loop, as its rows are).
var queueNode = regexp.MustCompile(`(?m)^.*Scan.* on probe_open_jobs \w+ .*actual rows=(\d+) loops=(\d+)\)\n((?:\s+(?:Index Cond|Filter|Rows Removed by Filter|Rows Removed by Index Recheck|Heap Fetches|Heap Blocks|Recheck Cond|Order By|Buffers):.*\n)*)`)

var removedByFilter = regexp.MustCompile(`Rows Removed by Filter: (\d+)`)

// The claim reads the open-job queue by key lookups whatever its statistics say
// (migrations/00027_claim_queue_lookups.sql). The claim's plan is kept for the session (00025) and
// made by its first claim, at a round's start, when the queue (it empties between rounds) is empty
// or nearly, and often analysed so. The planner then weighed reading the whole queue once behind a
// Materialize, and walking probe_open_jobs_requested_idx backward filtered by server, as cheap as
// looking each server up, and the session kept those walks while the round filled the queue: every
// server judged read every open job (6,800 each under BenchmarkThroughput; 15,025 a claim here).
// Those reads were first found as Seq Scans (15,000 rows read per server judged, until an
// ANALYZE); 00025's enable_seqscan = off only moved them to Index Scans without conditions, which a
// check for Seq Scans alone lets pass (that check is kept below, too). Here the session's first
// claim plans while the queue is analysed empty; another then opens 15,000 jobs; the session's next
// claim must read at most two rows of the queue per server judged. (Only the queue's reads are
// judged here: a jobs partition analysed while empty can still have the spacing lookup walk the
// day's requested_at index, a case the migration names and leaves.)
func TestAClaimPlannedWhileTheQueueWasAnalysedEmptyReadsItByKeyOnceItIsFull(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := migrated.NewDB(t)
	dueServers(t, url, 20000)
	other := dbtest.Pool(t, url)
	// Analysed empty, and not analysed again while the test runs (autovacuum would, a minute on).
	_, err := other.Exec(ctx, "ANALYZE probe_open_jobs; ALTER TABLE probe_open_jobs SET (autovacuum_enabled = off)")
	require.NoError(t, err)
	pool, plans := explainedPool(t, url, true)
	round := testfactory.Round(ctx, t, pool, nil)
	claim := func(db queries.DBTX, n int) {
		jobs, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: n, MinSpacing: 10 * time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, n)
	}
	require.NotEmpty(t, plans(func() { claim(pool, 25) }))
	claim(other, 15000) // a round in flight: 15,000 jobs open
	// The queue's reads: the walk's open-job check and the judge's newest open job.
	queue := 0
	for _, p := range plans(func() { claim(pool, 25) }) {
		require.NotRegexp(t, openJobsBySeqScan, p, "a plan made for no open jobs, kept for 15,000")
		for _, m := range queueNode.FindAllStringSubmatch(p, -1) {
			rows, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			removed := 0
			if r := removedByFilter.FindStringSubmatch(m[3]); r != nil {
				removed, err = strconv.Atoi(r[1])
				require.NoError(t, err)
			}
			queue++
			require.LessOrEqualf(t, rows+removed, 2, "a node reads %d open jobs a loop (%d loops) in:\n%s", rows+removed, atoi(t, m[2]), p)
		}
	}
	require.GreaterOrEqual(t, queue, 2, "the claim's two reads of the open-job queue, in its plans")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
