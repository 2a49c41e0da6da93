package release_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/release"
)

func TestForRound(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	ctx := t.Context()

	t.Run("with no release recorded the round runs on the binary's defaults", func(t *testing.T) {
		r, err := release.ForRound(ctx, newDB(t), "v2", false)
		require.NoError(t, err)
		require.Nil(t, r)
	})

	record(t, pool, "v1", sequential, release.WayPrevious)
	v2 := record(t, pool, "v2", parallel, release.WayPrevious)

	t.Run("the active version runs with the active release's settings", func(t *testing.T) {
		r, err := release.ForRound(ctx, pool, "v2", false)
		require.NoError(t, err)
		require.Equal(t, v2.ID, r.ID)
		require.Equal(t, parallel, release.SettingsOf(*r))
	})
	t.Run("another version is refused naming the active one", func(t *testing.T) {
		_, err := release.ForRound(ctx, pool, "v1", false)
		var mismatch *release.VersionMismatchError
		require.ErrorAs(t, err, &mismatch)
		require.Equal(t, exit.Unavailable, exit.Code(err))
		require.ErrorContains(t, err, "release #2 (version v2) is active")
		require.ErrorContains(t, err, "this probectl is version v1")
	})
	t.Run("another version runs anyway when told to ignore the version", func(t *testing.T) {
		r, err := release.ForRound(ctx, pool, "v1", true)
		require.NoError(t, err)
		require.Equal(t, v2.ID, r.ID)
	})
	t.Run("after a rollback to the previous release the old binary may probe again", func(t *testing.T) {
		rollback(t, pool, release.WayPrevious)
		_, err := release.ForRound(ctx, pool, "v2", false)
		require.ErrorAs(t, err, new(*release.VersionMismatchError), "the rolled-back worker must stop")
		r, err := release.ForRound(ctx, pool, "v1", false)
		require.NoError(t, err)
		require.Equal(t, sequential, release.SettingsOf(*r))
	})
}
