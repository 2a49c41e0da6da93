package release_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

func TestForRound(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	ctx := t.Context()

	t.Run("with no release recorded the round runs on the binary's defaults", func(t *testing.T) {
		r, err := release.ForRound(ctx, tmpl.Pool(t), "v2", false)
		require.NoError(t, err)
		require.Nil(t, r)
	})

	record(t, pool, "v1", sequential, release.WayPrevious)
	v2 := record(t, pool, "v2", parallel, release.WayPrevious)

	t.Run("the active version runs with the active release's settings", func(t *testing.T) {
		r, err := release.ForRound(ctx, pool, "v2", false)
		require.NoError(t, err)
		require.Equal(t, v2.ID, r.ID)
		require.Equal(t, parallel, r.Carried)
	})
	t.Run("another version is refused naming the active one", func(t *testing.T) {
		_, err := release.ForRound(ctx, pool, "v1", false)
		var mismatch *release.VersionMismatchError
		require.ErrorAs(t, err, &mismatch)
		require.Equal(t, exit.Unavailable, exit.Code(err))
		require.ErrorContains(t, err, "release #2 (version v2) is active")
		require.ErrorContains(t, err, "this probectl is version v1")
		require.NotContains(t, err.Error(), "--", "the command that runs the round names its own flags")
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
		require.Equal(t, sequential, r.Carried)
	})
}

func TestSettingsForRoundRefusesTheWrongVersionAndChecksTheLease(t *testing.T) {
	t.Parallel()
	pool := tmpl.Pool(t)
	ctx := t.Context()
	record(t, pool, "v2", sequential, release.WayPrevious)
	flags := settings.Default()
	flags.Version = "v2"

	t.Run("the active version gets the release's settings and its id", func(t *testing.T) {
		s, overrides, err := release.SettingsForRound(ctx, pool, release.RoundRequest{BinaryVersion: "v2", Flags: flags})
		require.NoError(t, err)
		require.Equal(t, sequential.ClaimLimit, s.ClaimLimit)
		require.NotNil(t, s.ReleaseID)
		require.Empty(t, overrides)
	})
	t.Run("another version is refused with exit 3", func(t *testing.T) {
		_, _, err := release.SettingsForRound(ctx, pool, release.RoundRequest{BinaryVersion: "v3", Flags: flags})
		require.Equal(t, exit.Unavailable, exit.Code(err))
	})
	t.Run("a flag that breaks the lease together with the release's budget is refused", func(t *testing.T) {
		f := flags
		f.RequestTimeout = settings.Duration(2 * time.Minute) // 8 × 2m alone is past the 15-minute window
		_, _, err := release.SettingsForRound(ctx, pool, release.RoundRequest{BinaryVersion: "v2", Flags: f,
			Changed: func(s settings.Setting) bool { return s == settings.RequestTimeout }})
		require.ErrorContains(t, err, "lease")
		require.Equal(t, exit.Usage, exit.Code(err))
	})
}
