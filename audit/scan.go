package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// scanDuplicates makes the one pass over the jobs, then reads the details of the few pairs it
// found and of the closest pair.
func scanDuplicates(ctx context.Context, tx pgx.Tx, p DuplicatesParams) (*DuplicatesReport, error) {
	w := newWalker(p)
	if err := queries.AuditDuplicateScan(ctx, tx, w.from, p.Until, w.row); err != nil {
		return nil, err
	}
	r := &DuplicatesReport{
		Population: Population{Jobs: w.jobs, Servers: w.servers, Since: p.Since, Until: p.Until},
		Window:     p.Window,
		Periods:    w.periods,
		Pairs:      []Pair{},
	}
	if len(w.dupServers) > 0 {
		err := queries.AuditDuplicatePairs(ctx, tx, queries.AuditPairsParams{
			ServerIDs: w.dupServers, From: w.from, Since: p.Since, Until: p.Until, MaxGap: p.Window,
		}, func(row queries.AuditPairRow) error {
			pair := classify(row, p.Since)
			r.Pairs = append(r.Pairs, pair)
			per := &r.Periods[w.periodOf(pair.SecondRequestedAt)]
			per.Pairs++
			if !pair.Explained() {
				per.Unexplained++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if int64(len(r.Pairs)) != w.pairs {
		// Both reads see one snapshot, so they must agree; if not, the two definitions drifted.
		return nil, fmt.Errorf("audit: the scan counted %d duplicate pairs but their details show %d", w.pairs, len(r.Pairs))
	}
	if w.closestFound {
		c, err := closestPair(ctx, tx, p, w)
		if err != nil {
			return nil, err
		}
		r.Closest = c
	}
	return r, nil
}

// walker folds the ordered stream of (server, requested at) into counts. It keeps one previous
// row, the per-period counters and the ids of servers with a duplicate: nothing that grows with
// the population.
type walker struct {
	since, from time.Time
	window      time.Duration
	periods     []Period

	jobs, servers int64

	havePrev   bool
	prevServer int64
	prevAt     time.Time

	closestFound  bool
	closestGap    time.Duration
	closestServer int64

	pairs      int64
	dupServers []int64
}

func newWalker(p DuplicatesParams) *walker {
	w := &walker{since: p.Since, from: p.Since.Add(-p.Window), window: p.Window}
	starts := append([]time.Time{p.Since}, p.SplitAt...)
	for i, s := range starts {
		until := p.Until
		if i+1 < len(starts) {
			until = starts[i+1]
		}
		w.periods = append(w.periods, Period{Since: s, Until: until})
	}
	return w
}

// periodOf returns the index of the period holding t, which must be in [Since, Until).
func (w *walker) periodOf(t time.Time) int {
	return sort.Search(len(w.periods), func(i int) bool { return w.periods[i].Since.After(t) }) - 1
}

func (w *walker) row(job queries.AuditJobRow) error {
	server, at := job.ServerID, job.RequestedAt
	prevAt, sameServer := w.prevAt, w.havePrev && w.prevServer == server
	w.havePrev, w.prevServer, w.prevAt = true, server, at
	if at.Before(w.since) {
		return nil // a job before the population, there to be some job's previous one
	}
	per := &w.periods[w.periodOf(at)]
	w.jobs++
	per.Jobs++
	if !sameServer || prevAt.Before(w.since) {
		w.servers++
	}
	if !sameServer || prevAt.Before(per.Since) {
		per.Servers++
	}
	if !sameServer {
		return nil
	}
	gap := at.Sub(prevAt)
	duplicate := gap < w.window
	if duplicate {
		w.pairs++
	}
	if duplicate && (len(w.dupServers) == 0 || w.dupServers[len(w.dupServers)-1] != server) {
		w.dupServers = append(w.dupServers, server)
	}
	// Rows come in server order, so a strict < leaves ties to the lowest server id.
	if (duplicate || !prevAt.Before(w.since)) && (!w.closestFound || gap < w.closestGap) {
		w.closestFound, w.closestGap, w.closestServer = true, gap, server
	}
	return nil
}

// closestPair reads the ids and slug of the closest pair the scan found.
func closestPair(ctx context.Context, tx pgx.Tx, p DuplicatesParams, w *walker) (*ClosestPair, error) {
	var c *ClosestPair
	err := queries.AuditDuplicatePairs(ctx, tx, queries.AuditPairsParams{
		ServerIDs: []int64{w.closestServer}, From: w.from, Since: p.Since, Until: p.Until,
		MaxGap: w.closestGap + time.Microsecond,
	}, func(row queries.AuditPairRow) error {
		gap := row.SecondRequestedAt.Sub(row.FirstRequestedAt)
		eligible := gap < p.Window || !row.FirstRequestedAt.Before(p.Since)
		if c == nil && eligible && gap == w.closestGap {
			c = &ClosestPair{ServerID: row.ServerID, Slug: row.Slug, FirstJobID: row.FirstJobID,
				SecondJobID: row.SecondJobID, FirstRequestedAt: row.FirstRequestedAt,
				SecondRequestedAt: row.SecondRequestedAt, Gap: gap}
		}
		return nil
	})
	return c, err
}

// classify turns a pair's rows into a Pair and its class. An explicit re-check is explained
// whatever else is true of it.
func classify(r queries.AuditPairRow, since time.Time) Pair {
	p := Pair{
		ServerID: r.ServerID, Slug: r.Slug, FirstJobID: r.FirstJobID, SecondJobID: r.SecondJobID,
		FirstRequestedAt: r.FirstRequestedAt, SecondRequestedAt: r.SecondRequestedAt,
		SecondReason: r.SecondReason, RequestGap: r.SecondRequestedAt.Sub(r.FirstRequestedAt),
		FirstBeforeSince: r.FirstRequestedAt.Before(since),
	}
	if r.FirstFinishedAt != nil {
		gap := r.SecondRequestedAt.Sub(*r.FirstFinishedAt)
		p.FirstFinishedAt, p.GapAfterFinish = r.FirstFinishedAt, &gap
	}
	switch {
	case isRecheck(r.SecondReason):
		p.Class = ClassExplained
	case r.FailoverAt != nil:
		p.Class, p.FailoverAt = ClassFailover, r.FailoverAt
	case p.FirstFinishedAt == nil:
		p.Class = ClassOpen
	case *p.GapAfterFinish < 0:
		p.Class = ClassOverlap
	default:
		p.Class = ClassAfterFinish
	}
	return p
}

// isRecheck says whether a job's reason makes it an explicit re-check, which the spacing guard
// lets through and audits count as explained.
func isRecheck(reason string) bool {
	return reason == "maintainer_claim" || reason == "manual"
}
