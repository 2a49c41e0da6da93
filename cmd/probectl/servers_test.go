package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/testfactory"
)

const goodCSV = `slug,url,kind,plan
weather,https://weather.example/mcp,mcp,standard
status-page,https://status.example/health,http,frequent
`

func countServers(t *testing.T, url string) int {
	t.Helper()
	_, pool := url, dbtest.Pool(t, url)
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM servers").Scan(&n))
	return n
}

func TestImportThenListShowsTheServersDueNow(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	before := time.Now().Add(-time.Second)

	res := runCLI(t, "--database-url", url, "servers", "import", writeFile(t, "s.csv", goodCSV))
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "imported 2 server(s): 2 new, 0 updated\n", res.Stdout)

	res = runCLI(t, "--database-url", url, "servers", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	// The keys the README documents, by name: decoding into serverJSON alone would follow a rename.
	var shapes []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &shapes))
	for _, s := range shapes {
		require.ElementsMatch(t, []string{"id", "slug", "url", "kind", "transport", "plan", "check_interval_seconds", "status",
			"maintainer_claimed_at", "next_check_at", "created_at"}, keysOf(s))
	}
	var got []serverJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Len(t, got, 2)
	require.Equal(t, "status-page", got[0].Slug)
	require.Equal(t, "frequent", got[0].Plan)
	require.Equal(t, 900.0, got[0].CheckIntervalSeconds)
	require.Nil(t, got[0].Transport, "an http server has no transport")
	require.Equal(t, "streamable-http", *got[1].Transport, "an mcp server's default")
	require.Equal(t, "weather", got[1].Slug)
	require.Equal(t, 43200.0, got[1].CheckIntervalSeconds)
	for _, s := range got {
		require.Equal(t, "active", s.Status)
		require.WithinRange(t, s.NextCheckAt, before, time.Now().Add(time.Second), "a new server is due at once")
	}
}

func TestAddTakesAnMCPServersTransport(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := runCLI(t, "--database-url", url, "servers", "add", "--slug", "legacy", "--url", "https://legacy.example/sse",
		"--kind", "mcp", "--transport", "sse", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got serverJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Equal(t, "sse", *got.Transport)

	res = runCLI(t, "--database-url", url, "servers", "add", "--slug", "web", "--url", "https://web.example/",
		"--kind", "http", "--transport", "sse")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "--transport")
}

func TestImportReadsJSONLinesFromStdinAndUpsertsBySlug(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	require.Equal(t, 0, runCLI(t, "--database-url", url, "servers", "import", writeFile(t, "s.csv", goodCSV)).Code)

	jsonl := `{"slug":"weather","url":"https://weather.example/v2/mcp","kind":"mcp","plan":"frequent"}

{"slug":"new-one","url":"http://new.example:8080/","kind":"http"}
`
	res := cli{stdin: jsonl}.run(t, "--database-url", url, "servers", "import", "-")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "imported 2 server(s): 1 new, 1 updated\n", res.Stdout)
	res = runCLI(t, "--database-url", url, "servers", "list", "-o", "json")
	var got []serverJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Len(t, got, 3)
	require.Equal(t, "https://weather.example/v2/mcp", got[2].URL)
	require.Equal(t, "frequent", got[2].Plan)
	require.Equal(t, "standard", got[0].Plan, "plan defaults to standard")
}

func TestImportOfABadRowNamesTheLineImportsNothingAndExits2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, content, want string
	}{
		{"a bad url", "s.csv", goodCSV + "broken,ftp://x.example/,http,standard\n", "line 4: url \"ftp://x.example/\": scheme must be http or https"},
		{"an unknown kind", "s.csv", goodCSV + "grpc-one,https://x.example/,grpc,standard\n", "line 4: kind \"grpc\": must be mcp or http"},
		{"an unknown plan", "s.csv", goodCSV + "hourly,https://x.example/,http,hourly\n", "line 4: plan \"hourly\": must be standard"},
		{"a duplicate slug in the file", "s.csv", goodCSV + "weather,https://other.example/,http,standard\n", "line 4: slug \"weather\" already appears on line 2"},
		{"a url carrying credentials", "s.csv", goodCSV + "creds,https://user:pw@x.example/,http,standard\n", "line 4: url \"https://user:xxxxx@x.example/\": must not carry credentials"},
		{"a row with too few fields", "s.csv", goodCSV + "short,https://x.example/\n", "line 4: has 2 fields, the header has 4"},
		{"an unknown column", "s.csv", "slug,url,kind,colour\n", "line 1: unknown column \"colour\""},
		{"a bad json line", "s.jsonl", `{"slug":"a","url":"https://a.example/","kind":"http"}` + "\n" + `{"slug":"b",` + "\n", "line 2: not a JSON object"},
		{"a json line with an unknown field", "s.jsonl", `{"slug":"a","url":"https://a.example/","kind":"http","colour":"red"}` + "\n", "line 1: not a JSON object"},
		{"an empty file", "s.csv", "", "import has no servers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, _ := migratedDB(t)
			res := runCLI(t, "--database-url", url, "servers", "import", writeFile(t, tc.file, tc.content))
			require.Equal(t, 2, res.Code, res.Stderr)
			require.Contains(t, res.Stderr, tc.want)
			require.Empty(t, res.Stdout)
			require.Equal(t, 0, countServers(t, url), "nothing is imported")
			require.NotContains(t, res.Stderr, ":pw@", "a password in a refused url is not printed")
		})
	}
}

func TestImportOfAMissingFileExits2(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "--database-url", "postgres://127.0.0.1:1/x", "servers", "import", "/nonexistent/servers.csv")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "/nonexistent/servers.csv: no such file or directory")
}

func TestAddValidatesBeforeConnectingAndNamesTheFlag(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "--database-url", "postgres://127.0.0.1:1/x", "servers", "add", "--slug", "x", "--url", "https://x.example/", "--kind", "smtp")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "--kind \"smtp\": must be mcp or http")

	res = runCLI(t, "servers", "add", "--slug", "x")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "required flag")
}

func TestAddAndRecheckMakeTheServerDueWithAMaintainerClaim(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	res := runCLI(t, "--database-url", url, "servers", "add", "--slug", "weather", "--url", "https://weather.example/mcp", "--kind", "mcp")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "added server weather (mcp, standard, every 12h)\n", res.Stdout)

	ctx := context.Background()
	_, err := pool.Exec(ctx, "UPDATE servers SET next_check_at = now() + interval '12 hours'")
	require.NoError(t, err)

	res = runCLI(t, "--database-url", url, "servers", "recheck", "weather", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var s serverJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &s))
	require.NotNil(t, s.MaintainerClaimedAt)
	require.WithinDuration(t, time.Now(), s.NextCheckAt, 5*time.Second, "a re-checked server is due now")

	res = runCLI(t, "--database-url", url, "servers", "recheck", "nobody")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, `server "nobody": no server with that slug`)
}

func TestImportFromTheMCPRegistryWritesAllOrNothing(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	fixture := "../../internal/directory/testdata/mcp-registry/servers.json"

	res := runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", fixture, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.JSONEq(t, `{"inserted": 27, "updated": 0, "dry_run": false,
		"skipped": {"deleted": 2, "older_version": 5, "packages_only": 8, "templated_url": 2}}`, res.Stdout)
	require.Equal(t, 27, countServers(t, url))

	res = runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", fixture)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "imported 27 server(s): 0 new, 27 updated; skipped 2 deleted, 5 older version(s), "+
		"8 with packages only, 2 templated URL(s)\n", res.Stdout, "slugs are stable across imports")

	bad := writeFile(t, "bad.json", `{"servers":[
		{"server":{"name":"io.github.new/fine","remotes":[{"type":"sse","url":"https://fine.example/sse"}]}},
		{"server":{"name":"io.github.new/broken","remotes":[{"type":"streamable-http","url":"ftp://broken.example/"}]}}]}`)
	res = runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", bad)
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, `entry 1 ("io.github.new/broken"): remotes[0]: url`)
	require.Equal(t, 27, countServers(t, url), "nothing written")

	res = runCLI(t, "--database-url", url, "servers", "import", "--format", "yaml", bad)
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, "--format")
}

func TestRecheckOfSeveralSlugsClaimsAllOrNoneAndNamesEveryUnknownSlug(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	for _, slug := range []string{"weather", "status-page", "weather-eu"} {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug})
	}
	later := time.Now().Add(12 * time.Hour)
	_, err := pool.Exec(ctx, "UPDATE servers SET next_check_at = $1", later)
	require.NoError(t, err)
	claimed := func() []string {
		rows, err := pool.Query(ctx, "SELECT slug FROM servers WHERE maintainer_claimed_at IS NOT NULL ORDER BY slug")
		require.NoError(t, err)
		slugs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return slugs
	}

	// One unknown slug among known ones: exit 2 naming it, and not one server changed.
	res := runCLI(t, "--database-url", url, "servers", "recheck", "weather", "nobody", "status-page", "ghost")
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, `no server with these slugs: "nobody", "ghost"; nothing was changed`)
	require.Empty(t, claimed(), "all or none: the known servers were not re-checked either")

	res = runCLI(t, "--database-url", url, "servers", "recheck", "weather", "status-page", "weather", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var servers []serverJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &servers), res.Stdout)
	require.Len(t, servers, 2, "a slug named twice is re-checked once")
	for _, s := range servers {
		require.NotNil(t, s.MaintainerClaimedAt, s.Slug)
		require.WithinDuration(t, time.Now(), s.NextCheckAt, 5*time.Second, "%s is due now", s.Slug)
	}
	require.Equal(t, []string{"status-page", "weather"}, claimed())

	res = runCLI(t, "--database-url", url, "servers", "recheck", "weather-eu", "weather")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "server weather-eu is due now; its next job will be a maintainer_claim\n"+
		"server weather is due now; its next job will be a maintainer_claim\n", res.Stdout)

	many := make([]string, directory.MaxRecheck+1)
	for i := range many {
		many[i] = fmt.Sprintf("s%d", i)
	}
	res = cli{}.run(t, append([]string{"--database-url", refusedDatabaseURL(t), "servers", "recheck"}, many...)...)
	require.Equal(t, 2, res.Code, "the bound is checked before connecting: %s", res.Stderr)
	require.Contains(t, res.Stderr, fmt.Sprintf("at most %d servers", directory.MaxRecheck))
}

func TestImportReadsAJSONArrayAndPointsARegistryFileAtItsFormat(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	array := `[
  {"slug": "weather", "url": "https://weather.example/mcp", "kind": "mcp"},
  {"slug": "status-page", "url": "https://status.example/health", "kind": "http", "plan": "frequent"}
]`
	res := runCLI(t, "--database-url", url, "servers", "import", writeFile(t, "servers.json", array))
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, "imported 2 server(s): 2 new, 0 updated\n", res.Stdout)

	res = cli{stdin: `[{"slug": "x", "url": "https://x.example/", "kind": "grpc"}]`}.run(t, "--database-url", url, "servers", "import", "-")
	require.Equal(t, 2, res.Code)
	require.Contains(t, res.Stderr, `stdin: line 1: kind "grpc": must be mcp or http`)

	// The registry's list response, imported as if it were the directory's own format.
	registry := "../../internal/directory/testdata/mcp-registry/servers.json"
	res = runCLI(t, "--database-url", url, "servers", "import", registry)
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Equal(t, "probectl: "+registry+": this is an MCP registry document (its list response or a server.json), "+
		"not CSV or JSON lines; import it with --format mcp-registry\n", res.Stderr)
	require.Equal(t, 2, countServers(t, url), "nothing more is imported")
}
