package statuspage_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/internal/testfactory"
)

// The headline counts the duplicate pairs an operator must look at: an explicit re-check (manual,
// maintainer_claim) is a pair by design, listed below but not counted as the incident's.
func TestTheDuplicatesCardCountsOnlyUnexplainedPairs(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	ctx := context.Background()
	now := statustest.Now
	id := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "rechecked"})
	first, second := now.Add(-30*time.Minute), now.Add(-28*time.Minute)
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: id, RequestedAt: &first,
		FinishedAt: testfactory.Ptr(first.Add(time.Second)), Outcome: "ok"})
	testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: id, RequestedAt: &second, Reason: "manual",
		FinishedAt: testfactory.Ptr(second.Add(time.Second)), Outcome: "ok"})
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return now }})
	for path, label := range map[string]string{"/status": "unexplained duplicate pairs, 24 h", "/zh/status": "无法解释的重复领取（24 小时）"} {
		res := get(t, h, path)
		require.Equal(t, http.StatusOK, res.Code)
		card := regexp.MustCompile(`<span class="value">([^<]*)</span>\s*<span class="label">` + regexp.QuoteMeta(label))
		m := card.FindStringSubmatch(res.Body)
		require.NotNil(t, m, "%s has the card %q", path, label)
		require.Equal(t, "0", m[1], "%s: the one pair is an explicit re-check", path)
		require.Contains(t, res.Body, "rechecked", "%s still lists the pair", path)
	}
}
