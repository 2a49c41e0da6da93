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

// The triggers verify looks for are the ones the migrations leave: a migration that adds, drops,
// renames or changes one fails here until GuardTriggers says so, the statement that makes it
// included. On a database as migrated, every one fires, and so does every partition's copy.
func TestGuardTriggersAreTheMigratedOnes(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	live, err := queries.LiveTriggers(t.Context(), pool)
	require.NoError(t, err)
	var schema string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema))
	var got, want []queries.GuardTrigger
	for _, tr := range live {
		require.True(t, tr.Enabled, "%s.%s fires", tr.Table, tr.Name)
		require.Empty(t, tr.OffIn, "%s.%s: every partition has its copy", tr.Table, tr.Name)
		got = append(got, queries.GuardTrigger{Table: tr.Table, Name: tr.Name, Function: tr.Function, Type: tr.Type,
			Create: strings.Replace(tr.Create, " ON "+schema+"."+tr.Table+" ", " ON "+tr.Table+" ", 1)})
	}
	for _, tr := range queries.GuardTriggers {
		require.NotEmpty(t, tr.Holds, "%s.%s says what it holds", tr.Table, tr.Name)
		tr.Holds = ""
		want = append(want, tr)
	}
	require.Equal(t, want, got)
}

// One migration back (00029 down: probe_runs_once made again without its WHEN), every guard
// trigger is still the one verify looks for, by name, function and type: a database going back one
// version passes verify's trigger check.
func TestGuardTriggersHoldOneMigrationBack(t *testing.T) {
	t.Parallel()
	pool, p := upOnEmptyDB(t)
	_, err := p.DownTo(t.Context(), runsOnceVersion-1)
	require.NoError(t, err)
	live, err := queries.LiveTriggers(t.Context(), pool)
	require.NoError(t, err)
	got := map[string]queries.LiveTrigger{}
	for _, tr := range live {
		got[tr.Table+"."+tr.Name] = tr
	}
	for _, g := range queries.GuardTriggers {
		tr, ok := got[g.Table+"."+g.Name]
		require.True(t, ok, "%s.%s", g.Table, g.Name)
		require.Equal(t, []any{g.Function, g.Type, true}, []any{tr.Function, tr.Type, tr.Enabled}, "%s.%s", g.Table, g.Name)
	}
	require.NotContains(t, got["probe_runs.probe_runs_once"].Create, "WHEN", "00028's probe_runs_once")
}
