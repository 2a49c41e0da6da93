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
