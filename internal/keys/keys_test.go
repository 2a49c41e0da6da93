package keys_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("keys", testfactory.Migrate)

func TestARetirementFromTheFutureIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	key, err := keys.Generate(t.Context(), pool, filepath.Join(t.TempDir(), "probe.key"))
	require.NoError(t, err)
	now := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	later := now.Add(time.Second)
	r := keys.Retirement{KeyID: key.KeyID, At: &later, Now: now}

	var future *keys.FutureError
	require.ErrorAs(t, r.Validate(), &future, "refused without a database")
	assert.Equal(t, exit.Usage, exit.Code(r.Validate()))
	assert.EqualError(t, r.Validate(), "at: 2026-11-28T14:00:01Z is in the future; a key is retired from now or from a time past")
	_, err = keys.Preview(t.Context(), pool, r)
	require.ErrorAs(t, err, &future)
	_, err = keys.Retire(t.Context(), pool, r)
	require.ErrorAs(t, err, &future)
	listed, err := keys.List(t.Context(), pool)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Nil(t, listed[0].RetiredAt, "nothing was retired")

	r.At = &now
	require.NoError(t, r.Validate(), "from now is allowed")
	done, err := keys.Retire(t.Context(), pool, r)
	require.NoError(t, err)
	assert.True(t, done.RetiredAt.Equal(now))
}

func TestAPreviewSaysWhatARetirementWouldDoAndChangesNothing(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	key, err := keys.Generate(t.Context(), pool, filepath.Join(t.TempDir(), "probe.key"))
	require.NoError(t, err)
	r := keys.Retirement{KeyID: key.KeyID, Now: time.Now()}
	would, err := keys.Preview(t.Context(), pool, r)
	require.NoError(t, err)
	assert.True(t, would.Changed())
	listed, err := keys.List(t.Context(), pool)
	require.NoError(t, err)
	assert.Nil(t, listed[0].RetiredAt)
	_, err = keys.Retire(t.Context(), pool, keys.Retirement{KeyID: "ed25519:0000000000000000", Now: time.Now()})
	require.ErrorIs(t, err, queries.ErrNoSuchKey)
}

func TestGenerateRegistersTheKeyItWritesAndNeverOverwritesAFile(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	path := filepath.Join(t.TempDir(), "probe.key")
	key, err := keys.Generate(t.Context(), pool, path)
	require.NoError(t, err)
	signer, err := attest.LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, signer.KeyID(), key.KeyID)

	_, err = keys.Generate(t.Context(), pool, path)
	var fileErr *attest.KeyFileError
	require.ErrorAs(t, err, &fileErr, "the caller names its flag")
	again, err := attest.LoadSigner(path)
	require.NoError(t, err)
	assert.Equal(t, key.KeyID, again.KeyID(), "the first key's file is intact")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}
