package schema_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/schema"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestMigrateAppliesProbectlsMigrationsThenRiversAndThenNothing(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t))
	before, err := schema.Status(t.Context(), pool)
	require.NoError(t, err)
	require.NotEmpty(t, before)
	for _, m := range before {
		assert.False(t, m.Applied, m.Name)
	}
	require.ErrorAs(t, queries.CheckSchema(t.Context(), pool), new(*queries.SchemaBehindError))

	applied, err := schema.Migrate(t.Context(), pool)
	require.NoError(t, err)
	require.Len(t, applied, len(before), "every migration the status listed")
	assert.Equal(t, "00001_init.sql", applied[0].Name)
	assert.True(t, strings.HasPrefix(applied[len(applied)-1].Name, "river/"), "River's come last")
	require.NoError(t, queries.CheckSchema(t.Context(), pool))

	again, err := schema.Migrate(t.Context(), pool)
	require.NoError(t, err)
	assert.Empty(t, again)
	after, err := schema.Status(t.Context(), pool)
	require.NoError(t, err)
	for _, m := range after {
		assert.True(t, m.Applied, m.Name)
	}
}
