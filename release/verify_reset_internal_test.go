package release

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/queries"
)

// Each place a setting can be found in is taken back by its own statement.
func TestEachSettingsPlaceHasItsOwnReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role, database, source, want string
	}{
		{"role r", "database d", "", "ALTER ROLE r IN DATABASE d RESET x"},
		{`role "R 1"`, "every database", "", `ALTER ROLE "R 1" RESET x`},
		{"every role", "database d", "", "ALTER DATABASE d RESET x"},
		{"every role", "every database", "", "ALTER ROLE ALL RESET x"},
		{"this session", "database d", "client", "take it out of PGOPTIONS (the client's startup options)"},
		{"this session", "database d", "configuration file", "take it out of postgresql.conf (or ALTER SYSTEM RESET x) and reload"},
		{"this session", "database d", "session", "RESET x where the session sets it"},
		{"this session", "database d", "", "take it out of PGOPTIONS or postgresql.conf (ALTER SYSTEM RESET x), or RESET x where the session sets it"},
		{"this session", "database d", "override", "find where the session gets it (pg_settings.source: override)"},
	} {
		got := resetOf(queries.GuardSetting{Role: tc.role, Database: tc.database, Setting: "x=y", Source: tc.source}, "x")
		require.Equal(t, tc.want, got, "%s, %s, %q", tc.role, tc.database, tc.source)
	}
}

// The statements that mend a trigger run where verify found the tables: in another schema than
// public they set the search_path first.
func TestTheStatementsThatMendATriggerSetTheSchemaWhenItIsNotPublic(t *testing.T) {
	t.Parallel()
	g := queries.GuardTriggers[0]
	in := func(schema string) string { return triggersOff(nil, schema)[0] }
	require.True(t, strings.HasSuffix(in("public"), ": make it again: "+g.Create), in("public"))
	require.True(t, strings.HasSuffix(in(`"Probe"`), `: make it again: BEGIN; SET LOCAL search_path = "Probe"; `+g.Create+"; COMMIT"),
		in(`"Probe"`))
	require.Len(t, triggersOff(nil, "public"), len(queries.GuardTriggers))
}
