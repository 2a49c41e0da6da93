package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// serverOwner is one server's URL and registry name, read back for assertions.
type serverOwner struct {
	ID           int64
	URL          string
	RegistryName *string
}

func readOwner(t *testing.T, pool *pgxpool.Pool, slug string) serverOwner {
	t.Helper()
	var o serverOwner
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT id, endpoint_url, registry_name FROM servers WHERE slug = $1`, slug).Scan(&o.ID, &o.URL, &o.RegistryName))
	return o
}

func TestARegistryNameNeverTakesOverAnotherNamesServer(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	first := writeFile(t, "first.json", `{"servers":[
		{"server":{"name":"io.github.acme/weather-x","remotes":[{"type":"streamable-http","url":"https://weather.acme.example/mcp"}]}}]}`)
	res := runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", first)
	require.Equal(t, 0, res.Code, res.Stderr)
	before := readOwner(t, pool, "io-github-acme-weather-x")
	require.Equal(t, "io.github.acme/weather-x", *before.RegistryName, "the registry name is recorded")

	// Another account publishes a name that maps to the same slug, pointing at its own host.
	second := writeFile(t, "second.json", `{"servers":[
		{"server":{"name":"io.github.new/fine","remotes":[{"type":"sse","url":"https://fine.example/sse"}]}},
		{"server":{"name":"io.github.acme-weather/x","remotes":[{"type":"streamable-http","url":"https://attacker.example/mcp"}]}}]}`)
	res = runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", second)
	require.Equal(t, 2, res.Code, res.Stdout)
	require.Contains(t, res.Stderr, `registry name "io.github.acme-weather/x" maps to the server of registry name "io.github.acme/weather-x"`)
	require.Equal(t, before, readOwner(t, pool, "io-github-acme-weather-x"), "the first name's server is unchanged")
	require.Equal(t, 1, countServers(t, url), "nothing of the refused import was applied")

	// The same name again is the same server: its moved remote updates it in place.
	moved := writeFile(t, "moved.json", `{"servers":[
		{"server":{"name":"io.github.acme/weather-x","remotes":[{"type":"streamable-http","url":"https://v2.weather.acme.example/mcp"}]}}]}`)
	res = runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", moved)
	require.Equal(t, 0, res.Code, res.Stderr)
	after := readOwner(t, pool, "io-github-acme-weather-x")
	require.Equal(t, before.ID, after.ID)
	require.Equal(t, "https://v2.weather.acme.example/mcp", after.URL)
}

func TestTwoRegistryNamesForOneSlugInOneFileAreRefusedNamingBoth(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	both := writeFile(t, "both.json", `{"servers":[
		{"server":{"name":"io.github.acme/weather-x","remotes":[{"type":"streamable-http","url":"https://weather.acme.example/mcp"}]}},
		{"server":{"name":"io.github.acme-weather/x","remotes":[{"type":"streamable-http","url":"https://attacker.example/mcp"}]}}]}`)
	res := runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", both)
	require.Equal(t, 2, res.Code, res.Stdout)
	require.Contains(t, res.Stderr, `entry 1 ("io.github.acme-weather/x"): slug "io-github-acme-weather-x": `+
		`registry name "io.github.acme-weather/x" maps to the server of registry name "io.github.acme/weather-x" (entry 0)`)
	require.Equal(t, 0, countServers(t, url))
}

func TestARegistryImportNeverTakesOverAServerAddedByHand(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	res := runCLI(t, "--database-url", url, "servers", "add", "--slug", "io-github-acme-weather",
		"--url", "https://weather.example/mcp", "--kind", "mcp")
	require.Equal(t, 0, res.Code, res.Stderr)
	before := readOwner(t, pool, "io-github-acme-weather")
	file := writeFile(t, "r.json", `{"servers":[
		{"server":{"name":"io.github.acme/weather","remotes":[{"type":"sse","url":"https://elsewhere.example/sse"}]}}]}`)
	res = runCLI(t, "--database-url", url, "servers", "import", "--format", "mcp-registry", file)
	require.Equal(t, 2, res.Code, res.Stdout)
	require.Contains(t, res.Stderr, `registry name "io.github.acme/weather" maps to a server added by hand`)
	require.Equal(t, before, readOwner(t, pool, "io-github-acme-weather"))
}
