package history_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// A result restored after a failover under a job of its own (its claim's id had been handed out
// again) keeps the envelope signed for the claim it answered: runs show verifies it against that
// job, as probe_restored_jobs records it, and says VALID.
func TestARunRestoredUnderANewJobVerifiesAgainstTheClaimItAnswered(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := migrated.Pool(t)
	pub, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	signer := attest.NewSigner(priv)
	require.NoError(t, queries.RegisterSigningKey(ctx, db, signer.KeyID(), pub))
	url := "https://lost.example/"
	lost := testfactory.Server(ctx, t, db, &testfactory.ServerOpts{Slug: "lost", URL: url, Kind: "http"})
	other := testfactory.Server(ctx, t, db, &testfactory.ServerOpts{Slug: "other"})
	reused := testfactory.Job(ctx, t, db, &testfactory.JobOpts{ServerID: other, FinishedAt: testfactory.Ptr(time.Now())})

	now := time.Now().UTC().Truncate(time.Microsecond)
	res := check.Result{Outcome: check.OutcomeOK, Summary: "HTTP 200", StartedAt: now, FinishedAt: now, Requests: []check.Request{}}
	env, err := signer.Sign(attest.Run{JobID: reused, ServerID: lost, Slug: "lost", URL: url, Kind: "http", RoundID: 7, Result: res})
	require.NoError(t, err)
	result, err := json.Marshal(res)
	require.NoError(t, err)
	restored, err := queries.RestoreRun(ctx, db, queries.RestoreParams{OriginalJobID: reused, OriginalRoundID: 7, ServerID: lost,
		RequestedAt: now.Add(-time.Second), Outcome: "ok", StartedAt: now, CheckFinishedAt: now, Requests: 0,
		Result: result, Envelope: env, Source: "journal"})
	require.NoError(t, err)
	require.NotEqual(t, reused, restored.JobID, "the id was another claim's: a job of its own")

	v, err := history.ShowRun(ctx, db, restored.RunID)
	require.NoError(t, err)
	require.NotNil(t, v.Verified)
	require.True(t, *v.Verified, v.VerifyError)
}
