package probe

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// Bounds on what a dry run spends judging endpoints against the SSRF guard.
const (
	// guardLookupTimeout bounds each name's resolution.
	guardLookupTimeout = 2 * time.Second
	// guardLookups is how many names are resolved at a time.
	guardLookups = 8
	// guardTotal bounds the whole judging: a directory of slow names must not hold a dry run for
	// (hosts / guardLookups) x guardLookupTimeout. Hosts not judged in time get no remark.
	guardTotal = 20 * time.Second
)

// PreviewGuarded is Preview, and then says which claimable servers the SSRF guard will refuse
// (loopback, private, link-local, metadata addresses) with the round's settings, so a dry run
// does not list them as claimable with no remark. Each host is resolved once, as a check would
// resolve it; nothing is sent to any server.
func PreviewGuarded(ctx context.Context, db queries.DBTX, s Settings, now *time.Time, c *check.Checker) (*Plan, error) {
	plan, err := Preview(ctx, db, s, now)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, p := range plan.Servers {
		if p.State == "claimable" {
			ids = append(ids, p.ServerID)
		}
	}
	if len(ids) == 0 {
		return plan, nil
	}
	endpoints, err := queries.ServerEndpoints(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	refused := judgeHosts(ctx, c.Refusal, endpoints, guardTotal)
	for i := range plan.Servers {
		p := &plan.Servers[i]
		if r, ok := refused[p.ServerID]; ok {
			p.Refused = r.Error()
			p.Why += "; the SSRF guard will refuse it: " + p.Refused
			plan.Refused++
			if !r.Always {
				plan.RefusedPrivate++
			}
		}
	}
	return plan, nil
}

// judgeHosts asks judge about each endpoint, one resolution per host (scheme and port included), a
// few at a time, for at most total: no lookup starts after it, and those under way are cut short.
func judgeHosts(ctx context.Context, judge func(context.Context, string) *check.RefusedError,
	endpoints map[int64]string, total time.Duration) map[int64]*check.RefusedError {
	ctx, cancelAll := context.WithTimeout(ctx, total)
	defer cancelAll()
	byHost := map[string][]int64{}
	sample := map[string]string{}
	for id, raw := range endpoints {
		key := raw
		if u, err := url.Parse(raw); err == nil {
			key = u.Scheme + "://" + u.Host
		}
		byHost[key] = append(byHost[key], id)
		sample[key] = raw
	}
	var mu sync.Mutex
	out := map[int64]*check.RefusedError{}
	sem := make(chan struct{}, guardLookups)
	var wg sync.WaitGroup
	for key, ids := range byHost {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			lctx, cancel := context.WithTimeout(ctx, guardLookupTimeout)
			r := judge(lctx, sample[key])
			cancel()
			if r == nil {
				return
			}
			mu.Lock()
			for _, id := range ids {
				out[id] = r
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
