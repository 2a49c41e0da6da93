package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

func TestMigrateFromEmptyThenAgainAppliesNothing(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyDB(t)

	res := runCLI(t, "--database-url", url, "migrate")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "00001_init.sql")
	require.Contains(t, res.Stdout, "applied ")

	res = runCLI(t, "--database-url", url, "migrate")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "schema is up to date; nothing to apply\n", res.Stdout)

	res = runCLI(t, "--database-url", url, "migrate", "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var st struct {
		Migrations []struct {
			Version int64  `json:"version"`
			Name    string `json:"name"`
			Applied bool   `json:"applied"`
		} `json:"migrations"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &st))
	require.NotEmpty(t, st.Migrations)
	for _, m := range st.Migrations {
		require.True(t, m.Applied, m.Name)
	}

	pool := dbtest.Pool(t, url)
	for _, table := range []string{"servers", "probe_rounds", "probe_jobs", "probe_runs", "releases", "signing_keys"} {
		var exists bool
		require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists))
		require.True(t, exists, table)
	}
}

func TestACommandOnASchemaThatIsBehindSaysSoAndExits3(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyDB(t)
	res := runCLI(t, "--database-url", url, "servers", "list")
	require.Equal(t, 3, res.Code)
	require.Contains(t, res.Stderr, "database schema is at version 0")
	require.Contains(t, res.Stderr, "run `probectl migrate`")

	// A schema one step behind is refused too.
	require.Equal(t, 0, runCLI(t, "--database-url", url, "migrate").Code)
	pool := dbtest.Pool(t, url)
	_, err := pool.Exec(context.Background(), "DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)")
	require.NoError(t, err)
	res = runCLI(t, "--database-url", url, "servers", "list")
	require.Equal(t, 3, res.Code)
	require.Contains(t, res.Stderr, "database schema is at version")
}

func TestAnUnreachableDatabaseExits3NamingHostAndPortButNotThePassword(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		nil, // the flag
		{"PROBECTL_DATABASE_URL": "postgres://probe:hunter2secret@127.0.0.1:1/probectl"},
		{"DATABASE_URL": "postgres://probe:hunter2secret@127.0.0.1:1/probectl"},
		{"PGHOST": "127.0.0.1", "PGPORT": "1", "PGPASSWORD": "hunter2secret"},
	} {
		args := []string{"servers", "list"}
		if env == nil {
			args = append([]string{"--database-url", "postgres://probe:hunter2secret@127.0.0.1:1/probectl"}, args...)
		}
		res := cli{env: env}.run(t, args...)
		require.Equal(t, 3, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "could not reach database at 127.0.0.1:1")
		require.NotContains(t, res.Stderr+res.Stdout, "hunter2secret")
	}
}

func TestABadDatabaseURLExits2WithoutThePassword(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"postgres://probe:hunter2secret@127.0.0.1:99999999/x",
		// An '@' in the password: the parser cannot tell where the password ends, so any echo
		// of the string would show part of it.
		"postgres://probe:hunter2@secret@127.0.0.1:notaport/x",
	} {
		res := runCLI(t, "--database-url", url, "servers", "list")
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Equal(t, "probectl: bad database url (from --database-url): invalid port\n", res.Stderr)
		require.NotContains(t, res.Stderr, "secret")
	}
}

func TestHelpVersionAndBadFlagsNeverConnect(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PROBECTL_DATABASE_URL": "postgres://127.0.0.1:1/x"}
	c := cli{env: env}
	res := c.run(t, "--version")
	require.Equal(t, 0, res.Code)
	require.Equal(t, "probectl dev (commit none, built unknown)\n", res.Stdout)
	res = c.run(t, "version", "-o", "json")
	require.Equal(t, 0, res.Code)
	require.JSONEq(t, `{"version":"dev","commit":"none","date":"unknown"}`, res.Stdout)
	res = c.run(t, "servers", "list", "--help")
	require.Equal(t, 0, res.Code)
	require.Contains(t, res.Stdout, "Examples:")
	res = c.run(t, "servers", "list", "--bogus")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "unknown flag: --bogus")
	res = c.run(t, "servers", "list", "-o", "yaml")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, `--output "yaml"`)
	res = c.run(t, "servers", "list", "--status", "bogus")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, `--status "bogus": must be active, paused or delisted`)
	res = c.run(t, "nonsense")
	require.Equal(t, 2, res.Code)
	require.True(t, strings.HasPrefix(res.Stderr, "probectl: unknown command"), res.Stderr)
}

func TestMigrateStatusShowsWhenRiversMigrationsWereApplied(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	// A known time on one of River's migrations, to find it in the table.
	_, err := pool.Exec(ctx, "UPDATE river_migration SET created_at = '2026-03-04T05:06:07Z' WHERE version = 1")
	require.NoError(t, err)

	res := runCLI(t, "--database-url", url, "migrate", "status")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NotContains(t, res.Stdout, "0001-01-01", "no applied migration shows the zero time")
	var river []string
	for _, line := range lines(res.Stdout) {
		if strings.Contains(line, "river/") {
			river = append(river, line)
			require.Regexp(t, `applied\s+20\d\d-\d\d-\d\dT`, line)
		}
	}
	require.NotEmpty(t, river)
	require.Regexp(t, `^1\s+river/.+\s+applied\s+2026-03-04T05:06:07Z$`, strings.TrimSpace(river[0]))

	res = runCLI(t, "--database-url", url, "migrate", "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var st struct {
		Migrations []struct {
			Name      string     `json:"name"`
			AppliedAt *time.Time `json:"applied_at"`
		} `json:"migrations"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &st))
	for _, m := range st.Migrations {
		require.NotNil(t, m.AppliedAt, m.Name)
		require.True(t, m.AppliedAt.After(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)), "%s at %s", m.Name, m.AppliedAt)
	}
}
