package queries_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

func TestShippedFunctionBodiesAreWhatTheDatabaseStores(t *testing.T) {
	t.Parallel()
	shipped, err := queries.ShippedFunctionBodies()
	require.NoError(t, err)
	require.Contains(t, shipped, "probe_claim")
	require.Contains(t, shipped, "probe_finish")

	names := make([]string, 0, len(shipped))
	for name := range shipped {
		names = append(names, name)
	}
	live, err := queries.LiveFunctionBodies(t.Context(), migrated.Pool(t), names)
	require.NoError(t, err)
	require.Equal(t, shipped, live)
}

func TestTheClaimTakesTheDocumentedLockKeyInItsOwnStatement(t *testing.T) {
	t.Parallel()
	shipped, err := queries.ShippedFunctionBodies()
	require.NoError(t, err)
	body := shipped["probe_claim"]
	lock := "PERFORM pg_advisory_xact_lock(" + strconv.FormatInt(queries.ClaimLockKey, 10) + ");"
	require.Contains(t, body, lock)
	// The lock comes before the first statement that reads servers or jobs.
	require.Less(t, strings.Index(body, lock), strings.Index(body, "UPDATE probe_jobs"))
	require.Less(t, strings.Index(body, lock), strings.Index(body, "FROM servers"))
}

// The triggers verify looks for are the ones the migrations leave: a migration that adds, drops
// or renames one fails here until GuardTriggers says so. On a database as migrated, every one
// fires, and so does every partition's copy.
func TestGuardTriggersAreTheMigratedOnes(t *testing.T) {
	t.Parallel()
	live, err := queries.LiveTriggers(t.Context(), migrated.Pool(t))
	require.NoError(t, err)
	var got, want []string
	for _, tr := range live {
		got = append(got, tr.Table+"."+tr.Name)
		require.True(t, tr.Enabled, "%s.%s fires", tr.Table, tr.Name)
		require.Empty(t, tr.OffIn, "%s.%s: every partition has its copy", tr.Table, tr.Name)
	}
	for _, tr := range queries.GuardTriggers {
		want = append(want, tr.Table+"."+tr.Name)
		require.NotEmpty(t, tr.Holds, "%s.%s says what it holds", tr.Table, tr.Name)
	}
	require.Equal(t, want, got)
}
