package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A write refused because the database takes none (here a database made read-only, as a hot
// standby is) exits 3 with PostgreSQL's error and what to check: the URL may name a standby.
func TestAWriteToADatabaseThatTakesNoneSaysToPointAtThePrimary(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	_, err := pool.Exec(t.Context(), `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)
	require.NoError(t, err)

	res := runCLI(t, "--database-url", url, "servers", "add", "--slug", "weather", "--url", "https://weather.example/mcp", "--kind", "mcp")
	require.Equal(t, 3, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "read-only transaction (SQLSTATE 25006)")
	require.Contains(t, res.Stderr, "it is a hot standby, or its role or database is read-only")
	require.Contains(t, res.Stderr, "point --database-url (or PROBECTL_DATABASE_URL) at the primary")
}
