package statuspage_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/internal/testfactory"
)

// A round that lost checks (jobs closed as abandoned without a run) says so on the page in both
// languages, whatever its state: here one that died and was ended later by an invocation a
// worker's queue retried, so it reads finished, its duration beside the loss.
func TestThePageSaysTheChecksARoundLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	start := statustest.Now.Add(-time.Hour)
	beat, end := start.Add(time.Minute), start.Add(16*time.Minute)
	round := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{Version: "v1", StartedAt: &start, HeartbeatAt: &beat, FinishedAt: &end})
	for _, slug := range []string{"lost-one", "lost-two"} {
		srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug, URL: "https://" + slug + ".example/"})
		testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &round, RequestedAt: &start,
			FinishedAt: &end, Outcome: "abandoned"})
	}
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return statustest.Now }})
	for path, want := range map[string][2]string{"/status": {"16m", "2 checks lost"}, "/zh/status": {"16分", "丢失 2 次检查"}} {
		res := get(t, h, path)
		require.Equal(t, http.StatusOK, res.Code)
		require.Contains(t, res.Body, `">`+want[0]+` <span class="badge dead"`, path)
		require.Contains(t, res.Body, `">`+want[1]+`</span>`, path)
	}
}
