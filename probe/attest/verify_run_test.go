package attest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAStoredRunVerifiesOnlyByAKeyNotYetRetiredWhenItsJobFinished(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	r := sampleRun()
	env, err := s.Sign(r)
	require.NoError(t, err)
	finished := time.Date(2026, 10, 7, 22, 14, 0, 0, time.UTC)
	stored := StoredRun{Envelope: env, FinishedAt: finished, Slug: r.Slug, URL: r.URL, JobID: r.JobID}
	key := func(retired *time.Time) map[string]RegisteredKey {
		return map[string]RegisteredKey{s.KeyID(): {Public: s.PublicKey(), RetiredAt: retired}}
	}

	require.NoError(t, VerifyRun(stored, key(nil)), "a key never retired")
	later := finished.Add(time.Second)
	require.NoError(t, VerifyRun(stored, key(&later)), "retired after the job finished: what it signed before keeps verifying")
	assert.EqualError(t, VerifyRun(stored, key(&finished)),
		"signed only by a key retired before its job finished at 2026-10-07T22:14:00Z")

	other := stored
	other.JobID++
	assert.Error(t, VerifyRun(other, key(nil)), "the statement of another job")
	other = stored
	other.Slug = "another"
	assert.Error(t, VerifyRun(other, key(nil)), "the statement of another server")
	assert.ErrorIs(t, VerifyRun(stored, map[string]RegisteredKey{}), ErrUnknownKey)
}
