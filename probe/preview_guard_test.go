package probe

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/check"
)

// A dry run's SSRF judging has a bound of its own, not only one per lookup: with names that never
// resolve, no lookup starts once the total has passed, so a directory of slow names cannot hold a
// dry run for (hosts / guardLookups) x guardLookupTimeout. The judge blocks until its context
// ends; without the total bound all 100 hosts would be asked, 8 at a time, 2 s each.
func TestADryRunStopsJudgingHostsWhenItsTotalBoundEnds(t *testing.T) {
	t.Parallel()
	endpoints := map[int64]string{}
	for i := range int64(100) {
		endpoints[i] = fmt.Sprintf("https://slow-%d.example/mcp", i)
	}
	var asked atomic.Int64
	judge := func(ctx context.Context, _ string) *check.RefusedError {
		asked.Add(1)
		<-ctx.Done()
		return nil
	}
	out := judgeHosts(context.Background(), judge, endpoints, time.Millisecond)
	require.Empty(t, out, "a host not judged gets no remark")
	require.LessOrEqual(t, asked.Load(), int64(guardLookups), "no lookup starts after the total bound")
}

// A dry run flags every cloud metadata endpoint and link-local address, even with private targets
// allowed, where a loopback fleet passes. Address literals: nothing is resolved, nothing dialled.
func TestADryRunFlagsEveryMetadataEndpointEvenWithPrivateTargetsAllowed(t *testing.T) {
	t.Parallel()
	c := check.New(check.Config{AllowPrivate: true})
	endpoints := map[int64]string{0: "http://127.0.0.1:8080/mcp", 1: "http://169.254.1.1/", 2: "http://[fe80::1]/"}
	for i, e := range check.MetadataEndpoints() {
		host := e.Addr.String()
		if e.Addr.Is6() {
			host = "[" + host + "]"
		}
		endpoints[int64(10+i)] = "http://" + host + "/latest/meta-data/"
	}
	out := judgeHosts(context.Background(), c.Refusal, endpoints, time.Minute)
	require.NotContains(t, out, int64(0), "loopback is allowed under private targets")
	require.Contains(t, out[1].Error(), "a link-local address; never allowed")
	require.Contains(t, out[2].Error(), "a link-local address; never allowed")
	for i, e := range check.MetadataEndpoints() {
		require.Contains(t, out[int64(10+i)].Error(), "a cloud metadata address ("+e.What+"); never allowed", e.Addr)
	}
}
