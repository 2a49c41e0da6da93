package probe

// The invariant under load: two overlapping rounds of 20 invocations each, one finishing in a
// transaction and one advance-first, against a loopback fleet of a few hundred http servers with
// random latency, and random delays injected before every database write. Afterwards no server
// has two jobs within ten minutes, jobs = runs = servers, no job is open, every run carries an
// envelope that verifies, and the fleet saw each server in one burst of at most 8 requests, all
// inside that server's one job. The same checks, run on the incident's configuration, must find
// the duplicates.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/incident"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

const fleetSize = 300

// stress runs one round per element of rounds at once, each on its own pool, against a fresh
// fleet and database, and returns every way the outcome breaks the promises.
func stress(t *testing.T, rounds ...func(r *Round)) (violations []string) {
	t.Helper()
	ctx := t.Context()
	url := migrated.NewDB(t)
	setup := dbtest.Pool(t, url, dbtest.MaxConns(4))
	fl := fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(rand.N(15 * time.Millisecond)) // the server's latency
		fmt.Fprintln(w, "ok")
	}))
	fl.AddServers(t, setup, fleetSize, "fleet", testfactory.ServerOpts{})
	signer := newSigner(t, setup)
	checker := check.New(check.Config{RequestTimeout: 5 * time.Second, AllowPrivate: true})
	jitter := hooks{beforeWrite: func(context.Context, write) { time.Sleep(rand.N(3 * time.Millisecond)) }}

	var wg sync.WaitGroup
	sums := make([]*Summary, len(rounds))
	errs := make([]error, len(rounds))
	for i, configure := range rounds {
		s := settings.Default()
		s.Version, s.AllowPrivateTargets = "test", true
		r := &Round{DB: dbtest.Pool(t, url, dbtest.MaxConns(10)), Settings: s, Checker: checker, Signer: signer, testKnobs: testKnobs{hooks: jitter}}
		configure(r)
		wg.Go(func() { sums[i], errs[i] = r.Run(ctx) })
	}
	wg.Wait()
	ids := make([]int64, len(rounds))
	for i := range rounds {
		require.NoError(t, errs[i])
		ids[i] = sums[i].RoundID
	}
	bad := func(format string, args ...any) { violations = append(violations, fmt.Sprintf(format, args...)) }

	jobs, err := queries.ListRoundJobs(ctx, setup, ids...)
	require.NoError(t, err)
	keys := testfactory.SigningKeys(ctx, t, setup)
	byServer := map[int64][]queries.RoundJob{}
	runs := 0
	for _, j := range jobs {
		for _, prev := range byServer[j.ServerID] {
			if j.RequestedAt.Sub(prev.RequestedAt) < 10*time.Minute {
				gap := "while the first was open"
				if prev.FinishedAt != nil {
					gap = fmt.Sprintf("%s after the first finished", j.RequestedAt.Sub(*prev.FinishedAt))
				}
				bad("server %s: two jobs within 10 min (%d and %d), the second %s", j.Slug, prev.JobID, j.JobID, gap)
			}
		}
		byServer[j.ServerID] = append(byServer[j.ServerID], j)
		if j.FinishedAt == nil {
			bad("job %d left open", j.JobID)
			continue
		}
		if j.RunID == nil {
			bad("job %d has no run", j.JobID)
			continue
		}
		runs++
		if *j.Outcome != "ok" {
			bad("job %d: outcome %s: %v", j.JobID, *j.Outcome, j.Error)
		}
		st, err := attest.Verify(j.Envelope, keys)
		if err == nil {
			err = st.CheckJob(j.JobID)
		}
		if err == nil {
			err = st.CheckSubject(j.Slug, j.URL)
		}
		if err != nil {
			bad("job %d: envelope: %v", j.JobID, err)
		}
	}
	if len(jobs) != runs || runs != len(byServer) {
		bad("jobs %d, runs %d, servers %d", len(jobs), runs, len(byServer))
	}

	// What the fleet saw: each server in one burst of at most 8 requests, all inside one job of
	// that server, and nothing asked of a server without a job.
	seen := fl.Arrivals()
	if len(seen) != len(byServer) {
		bad("the fleet saw %d servers, the database has jobs for %d", len(seen), len(byServer))
	}
	for _, js := range byServer {
		hits := seen[strings.TrimPrefix(js[0].URL, fl.URL)]
		if len(hits) > check.MaxRequests {
			bad("server %s: %d requests, more than %d", js[0].Slug, len(hits), check.MaxRequests)
		}
		if len(js) != 1 {
			continue // already a violation above
		}
		j := js[0]
		if j.Requests != nil && *j.Requests != len(hits) {
			bad("server %s: %d requests stored, %d seen", j.Slug, *j.Requests, len(hits))
		}
		for _, at := range hits {
			if j.FinishedAt != nil && (at.Before(j.RequestedAt) || at.After(*j.FinishedAt)) {
				bad("server %s: asked at %s, outside its job [%s, %s]", j.Slug, at, j.RequestedAt, *j.FinishedAt)
			}
		}
	}
	for _, sum := range sums {
		if sum.OpenJobs != 0 {
			bad("round %d: %d open jobs", sum.RoundID, sum.OpenJobs)
		}
	}
	if len(jobs) < 2*settings.Default().Capacity() && len(rounds) == 2 {
		bad("%d jobs: two rounds of capacity %d on %d due servers should claim all they can", len(jobs), settings.Default().Capacity(), fleetSize)
	}
	return violations
}

func TestTwoOverlappingRoundsOfTwentyInvocationsCheckNoServerTwice(t *testing.T) {
	t.Parallel()
	violations := stress(t,
		func(r *Round) { r.Settings.Finish = FinishTx },
		func(r *Round) { r.Settings.Finish = FinishAdvanceFirst },
	)
	require.Empty(t, violations)
}

func TestTheStressChecksFindTheIncidentsDuplicates(t *testing.T) {
	t.Parallel()
	// The incident's round: 20 invocations, the job finished before the next check time moved,
	// no spacing guard, and a network round trip between the two writes. The 10 ms is that round
	// trip, part of the scenario, not a synchronisation: this test shows the stress checks can see
	// duplicates (about 35 a run); the deterministic proof that a claim in the gap takes the server
	// is TestASecondClaimerBetweenTheTwoWrites..., parked on a channel.
	violations := stress(t, func(r *Round) {
		r.Settings.Finish, r.Settings.MinSpacing = FinishAdvanceFirst, 0
		r.WriteOrder = incidentOrder()
		// And the claim of the incident's time, whose claimed servers stay due: the lease would
		// keep them out of the gap.
		_, err := incident.UnleasedClaim(t.Context(), r.DB)
		require.NoError(t, err)
		r.hooks.betweenFinishWrites = func(context.Context, queries.ClaimedJob) { time.Sleep(10 * time.Millisecond) }
	})
	require.NotEmpty(t, violations)
	require.Contains(t, strings.Join(violations, "\n"), "two jobs within 10 min")
	t.Logf("the incident's configuration broke the promise %d times, e.g. %s", len(violations), violations[0])
}
