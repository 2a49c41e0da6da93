package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// passwordRole creates a login role whose connections from 127.0.0.1 must give its password
// (scram-sha-256, ahead of the test cluster's trust lines) and returns its name and password.
func passwordRole(t *testing.T, pool *pgxpool.Pool) (string, string) {
	t.Helper()
	ctx := context.Background()
	role, password := fmt.Sprintf("pw_%d", os.Getpid())+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")), "S3cret-pass"
	role = role[:min(len(role), 60)]
	_, err := pool.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN SUPERUSER PASSWORD '%s'", pgx.Identifier{role}.Sanitize(), password))
	require.NoError(t, err)
	var hbaFile string
	require.NoError(t, pool.QueryRow(ctx, "SHOW hba_file").Scan(&hbaFile))
	old, err := os.ReadFile(hbaFile)
	if err != nil {
		t.Skipf("cannot edit the test server's %s (PROBECTL_TEST_DATABASE_URL on another machine?): %v", hbaFile, err)
	}
	line := fmt.Sprintf("host all %s 127.0.0.1/32 scram-sha-256\n", role)
	require.NoError(t, os.WriteFile(hbaFile, append([]byte(line), old...), 0o600))
	_, err = pool.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	t.Cleanup(func() {
		cur, err := os.ReadFile(hbaFile)
		if err == nil {
			_ = os.WriteFile(hbaFile, []byte(strings.Replace(string(cur), line, "", 1)), 0o600)
			_, _ = pool.Exec(context.Background(), "SELECT pg_reload_conf()")
		}
	})
	return role, password
}

// A password kept out of the command line (and so out of 'ps'): from a passfile named by
// PGPASSFILE or by the URL's passfile parameter, as pgx reads it. A wrong passfile fails to
// connect, so the password is really checked.
func TestAPasswordFromAPassfileConnects(t *testing.T) {
	t.Parallel()
	dbURL, pool := migratedDB(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	dbname := strings.TrimPrefix(u.Path, "/")
	role, password := passwordRole(t, pool)

	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(good, []byte(fmt.Sprintf("127.0.0.1:%s:*:%s:%s\n", u.Port(), role, password)), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte(fmt.Sprintf("127.0.0.1:%s:*:%s:wrong\n", u.Port(), role)), 0o600))

	env := func(passfile string) map[string]string {
		return map[string]string{"PGHOST": "127.0.0.1", "PGPORT": u.Port(), "PGUSER": role, "PGDATABASE": dbname, "PGPASSFILE": passfile}
	}
	res := cli{env: env(good)}.run(t, "migrate", "status")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = cli{env: env(bad)}.run(t, "migrate", "status")
	require.Equal(t, 3, res.Code, "a wrong password is refused: the passfile is what let the first one in")
	require.NotContains(t, res.Stderr, "wrong")

	withPassfile := fmt.Sprintf("postgres://%s@127.0.0.1:%s/%s?sslmode=disable&passfile=%s", role, u.Port(), dbname, url.QueryEscape(good))
	res = cli{env: map[string]string{"PROBECTL_DATABASE_URL": withPassfile}}.run(t, "migrate", "status")
	require.Equal(t, 0, res.Code, res.Stderr)
}

func TestHelpEnvironmentWarnsThatAPasswordInTheFlagShowsInPs(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "help", "environment")
	require.Equal(t, 0, res.Code)
	for _, want := range []string{"--database-url is on the command line", "'ps'", "PROBECTL_DATABASE_URL", "PGPASSFILE", "~/.pgpass"} {
		require.Contains(t, res.Stdout, want)
	}
}
