package probe

import (
	"context"
	"encoding/json"
	"time"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// storeTools stores the tool list and definitions a check saw, before its run is finished: they
// are content-addressed (keyed by fingerprint), so storing them twice adds nothing and storing
// them for a run that is then not stored leaves only text that no run points at. A failure is
// reported and the run is finished anyway: the run's signed fingerprints are the evidence, the
// stored text only explains a change.
func (r *Round) storeTools(ctx context.Context, each time.Duration, st *state, job queries.ClaimedJob, res check.Result) {
	if res.ToolsFingerprint == "" {
		return
	}
	list, err := json.Marshal(res.ToolFingerprints)
	if err == nil {
		tctx, cancel := context.WithTimeout(ctx, each)
		_, err = queries.StoreTools(tctx, r.DB, queries.StoreToolsParams{
			ListFingerprint: res.ToolsFingerprint, List: list, Definitions: res.ToolDefinitions,
		})
		cancel()
	}
	if err != nil {
		st.problem("job %d (%s): %v; the run is stored without its tool definitions", job.JobID, job.Slug, err)
		r.Log.Error("storing tool definitions failed; the run keeps their fingerprints", "job", job.JobID, "server", job.Slug, "err", err)
	}
}
