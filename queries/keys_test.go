package queries_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

func TestVerificationKeysKeepEachKeysOwnRetirement(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	ctx := t.Context()
	at := []time.Time{
		time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC),
	}
	var ids []string
	for range 3 {
		pub, _, err := attest.GenerateKey()
		require.NoError(t, err)
		ids = append(ids, attest.KeyID(pub))
		require.NoError(t, queries.RegisterSigningKey(ctx, pool, ids[len(ids)-1], pub))
	}
	for i, a := range at {
		got, err := queries.RetireSigningKey(ctx, pool, ids[i], &a)
		require.NoError(t, err)
		require.True(t, got.Changed())
		require.Nil(t, got.Before)
		require.True(t, a.Equal(got.RetiredAt))
	}

	keys, err := queries.VerificationKeys(ctx, pool)
	require.NoError(t, err)
	require.Len(t, keys, 3)
	for i, a := range at {
		require.NotNil(t, keys[ids[i]].RetiredAt)
		require.True(t, a.Equal(*keys[ids[i]].RetiredAt), "key %d: %s", i, keys[ids[i]].RetiredAt)
	}
	require.Nil(t, keys[ids[2]].RetiredAt)

	// A retirement only moves earlier: a later date changes nothing, an earlier one moves it.
	later := at[1].Add(time.Hour)
	got, err := queries.RetireSigningKey(ctx, pool, ids[0], &later)
	require.NoError(t, err)
	require.False(t, got.Changed())
	require.True(t, at[0].Equal(got.RetiredAt))
	earlier := at[0].Add(-time.Hour)
	got, err = queries.RetireSigningKey(ctx, pool, ids[0], &earlier)
	require.NoError(t, err)
	require.True(t, got.Changed())
	require.True(t, earlier.Equal(got.RetiredAt))
	require.True(t, at[0].Equal(*got.Before))

	// An unknown key: refused, nothing written. (A moment still to come is internal/keys' rule.)
	_, err = queries.RetireSigningKey(ctx, pool, "ed25519:0000000000000000", nil)
	require.ErrorIs(t, err, queries.ErrNoSuchKey)
	keys, err = queries.VerificationKeys(ctx, pool)
	require.NoError(t, err)
	require.Nil(t, keys[ids[2]].RetiredAt)
}
