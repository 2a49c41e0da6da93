package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAMissingImportFileIsNamedOnce(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/x.csv"
	res := runCLI(t, "servers", "import", path)
	require.Equal(t, 2, res.Code)
	assert.Equal(t, "probectl: "+path+": no such file or directory\n", res.Stderr)
}

func TestAnotherDatabasesURLIsNotAPostgreSQLURL(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "--database-url", "mysql://probe:hunter2@db.internal:3306/probe", "servers", "list")
	require.Equal(t, 2, res.Code)
	assert.Equal(t, "probectl: bad database url (from --database-url): not a PostgreSQL URL (scheme \"mysql\"); "+
		"probectl needs postgres://user@host:5432/dbname\n", res.Stderr)
	assert.NotContains(t, res.Stderr, "hunter2")
}

func TestNoDatabaseConfiguredSaysSoAndHowToConfigureOne(t *testing.T) {
	t.Parallel()
	// Nothing names a database; libpq's default is tried, here a socket directory with no server.
	res := cli{env: map[string]string{}}.run(t, "servers", "list")
	if res.Code == 0 {
		t.Skip("a PostgreSQL answers at libpq's default on this machine")
	}
	require.Equal(t, 3, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "no database is configured, and none answered at the default")
	assert.Contains(t, res.Stderr, "name one with --database-url or PROBECTL_DATABASE_URL")

	// A database that was configured and is not there is an outage, said as before.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	res = runCLI(t, "--database-url", "postgres://probectl@"+addr+"/probectl", "servers", "list")
	require.Equal(t, 3, res.Code)
	assert.Contains(t, res.Stderr, "could not reach database at "+addr)
	assert.NotContains(t, res.Stderr, "no database is configured")
}

func TestImportReportsEveryBadRowAndWritesNothing(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	path := writeFile(t, "servers.csv", "slug,url,kind\nweather,https://weather.example/mcp,grpc\nok,https://ok.example/,http\nUP,https://up.example/,mcp\n")
	res := runCLI(t, "--database-url", url, "servers", "import", path)
	require.Equal(t, 2, res.Code)
	assert.Equal(t, "probectl: "+path+": 2 bad rows, nothing imported\n"+
		path+": line 2: kind \"grpc\": must be mcp or http\n"+
		path+": line 4: slug \"UP\": must be 1-100 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit\n", res.Stderr)
	res = runCLI(t, "--database-url", url, "servers", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.JSONEq(t, `[]`, res.Stdout, "the good row was not imported either")
}

func TestDryRunsOfServersImportAndAddChangeNothing(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	path := writeFile(t, "servers.csv", "slug,url,kind\nweather,https://weather.example/mcp,mcp\nstatus,https://status.example/,http\n")
	res := runCLI(t, "--database-url", url, "servers", "import", path, "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "would import 2 server(s): 2 new, 0 updated; nothing changed (dry run)\n", res.Stdout)
	res = runCLI(t, "--database-url", url, "servers", "import", path, "--dry-run", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.JSONEq(t, `{"inserted": 2, "updated": 0, "dry_run": true}`, res.Stdout)

	res = runCLI(t, "--database-url", url, "servers", "add", "--slug", "maps", "--url", "https://maps.example/", "--kind", "http", "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "would have added server maps (http, standard, every 12h); nothing changed (dry run)\n", res.Stdout)

	res = runCLI(t, "--database-url", url, "servers", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.JSONEq(t, `[]`, res.Stdout, "no dry run wrote anything")
}

func TestDeployRecordDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := withDB(url).run(t, "deploy", "record", "--ways-back", "fanout-off", "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "would record release #")
	assert.Contains(t, res.Stdout, "it is the first release; nothing changed (dry run)")
	res = withDB(url).run(t, "deploy", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, `"releases": []`)
}
