package probe

import (
	"context"
	"encoding/json"
	"time"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// MaxToolTextPerDay bounds the bytes of new tool lists and definitions one server's checks may
// store in a day (UTC): at one check per 15 minutes, a hostile server serving new definitions at
// every check stored ~490 MB a day. A new list counts first and is not stored when it does not
// fit; definitions past the bound are not stored; the run counts them
// (check.Result.ToolDefinitionsCut) and keeps their fingerprints. Each run also stores at most
// check.MaxToolDefinitionBytes.
const MaxToolTextPerDay = 1 << 20

// storeTools stores the tool list and definitions a check saw, before its run is signed and
// finished: they are content-addressed (keyed by fingerprint), so storing them twice adds nothing
// and storing them for a run that is then not stored leaves only text that no run points at. It
// returns how many new definitions the server's day had no room for. A failure is reported and
// the run is finished anyway: the run's signed fingerprints are the evidence, the stored text
// only explains a change.
func (r *Round) storeTools(ctx context.Context, each time.Duration, st *state, job queries.ClaimedJob, res check.Result) (cut int) {
	if res.ToolsFingerprint == "" {
		return 0
	}
	list, err := json.Marshal(res.ToolFingerprints)
	if err == nil {
		tctx, cancel := context.WithTimeout(ctx, each)
		var stored queries.StoredTools
		stored, err = queries.StoreTools(tctx, r.DB, queries.StoreToolsParams{
			ServerID: job.ServerID, DayBudget: MaxToolTextPerDay,
			ListFingerprint: res.ToolsFingerprint, List: list, Definitions: res.ToolDefinitions,
		})
		cancel()
		cut = int(stored.DefinitionsCut)
	}
	if err != nil {
		st.problem("job %d (%s): %v; the run is stored without its tool definitions", job.JobID, job.Slug, err)
		r.Log.Error("storing tool definitions failed; the run keeps their fingerprints", "job", job.JobID, "server", job.Slug, "err", err)
	}
	return cut
}
