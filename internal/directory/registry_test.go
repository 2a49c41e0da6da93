package directory

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRegistryTakesTheLatestRemotesAndCountsWhatItSkips(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/mcp-registry/servers.json")
	require.NoError(t, err)
	defer f.Close()
	got, err := ParseRegistry(f)
	require.NoError(t, err)
	require.Equal(t, RegistrySkipped{Deleted: 2, OlderVersion: 5, PackagesOnly: 8, TemplatedURL: 2}, got.Skipped)

	bySlug := map[string]RegistryRow{}
	for _, r := range got.Rows {
		bySlug[r.Slug] = r
		require.Equal(t, "mcp", r.Kind)
		require.NoError(t, r.Validate())
	}
	require.Len(t, got.Rows, 27)
	weather := bySlug["com-weather-mcp-weather"]
	require.Equal(t, "https://mcp.weather.example.com/mcp", weather.URL, "the latest version's remote, not 0.9.0's")
	require.Equal(t, "streamable-http", weather.Transport)
	require.Equal(t, "sse", bySlug["io-github-mapslabs-maps-mcp-sse"].Transport, "a second remote gets its type appended")
	require.Equal(t, "sse", bySlug["io-github-legacyco-old-api"].Transport, "deprecated is still listed, and checked")
	require.NotContains(t, bySlug, "io-github-badactor-free-crypto-mcp")

	var long []string
	for slug := range bySlug {
		if strings.HasPrefix(slug, "io-github-verylong") {
			long = append(long, slug)
			require.Len(t, slug, maxSlugLen)
		}
	}
	require.Len(t, long, 2, "the long name's two remotes stay two servers")
	require.NotEqual(t, long[0], long[1])
}

func TestParseRegistryReadsOneServerJSON(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/mcp-registry/server.json")
	require.NoError(t, err)
	defer f.Close()
	got, err := ParseRegistry(f)
	require.NoError(t, err)
	require.Len(t, got.Rows, 1)
	require.Equal(t, "com-weather-mcp-weather", got.Rows[0].Slug)
}

func TestParseRegistryNamesABadEntryByIndexAndName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, want string }{
		{"an unknown transport", `{"servers":[{"server":{"name":"a/ok","remotes":[{"type":"sse","url":"https://a.example/sse"}]}},
			{"server":{"name":"b/ws","remotes":[{"type":"websocket","url":"wss://b.example/"}]}}]}`,
			`entry 1 ("b/ws"): remotes[0]: `},
		{"a name that is no slug", `{"servers":[{"server":{"name":"Ü/x","remotes":[{"type":"sse","url":"https://a.example/sse"}]}}]}`,
			`entry 0 ("Ü/x"): remotes[0]: slug`},
		{"two entries with one slug", `{"servers":[{"server":{"name":"a/b","remotes":[{"type":"sse","url":"https://a.example/"}]}},
			{"server":{"name":"a.b","remotes":[{"type":"sse","url":"https://b.example/"}]}}]}`,
			`entry 1 ("a.b"): slug "a-b": registry name "a.b" maps to the server of registry name "a/b" (entry 0)`},
		{"a name over 500 characters", `{"servers":[{"server":{"name":"a/` + strings.Repeat("x", 499) + `","remotes":[{"type":"sse","url":"https://a.example/"}]}}]}`,
			`name: 501 characters, longer than the 500-character limit`},
		{"more than 16 remotes", `{"servers":[{"server":{"name":"a/many","remotes":[` +
			strings.TrimSuffix(strings.Repeat(`{"type":"sse","url":"https://a.example/sse"},`, 17), ",") + `]}}]}`,
			`entry 0 ("a/many"): remotes: 17, more than the 16 an entry may have`},
		{"packages that are not a list", `{"servers":[{"server":{"name":"a/b","packages":{"npm":"x"}}}]}`, `servers: not a list`},
		{"no remotes, no packages", `{"servers":[{"server":{"name":"a/b"}}]}`, `entry 0 ("a/b"): neither remotes nor packages`},
		{"not json", `servers: []`, `not a registry document`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRegistry(strings.NewReader(tc.doc))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzParseRegistry: whatever the input, every row it returns validates and slugs are unique.
func FuzzParseRegistry(f *testing.F) {
	data, err := os.ReadFile("testdata/mcp-registry/server.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add(`{"servers":[{"server":{"name":"a/b","remotes":[{"type":"sse","url":"https://a.example/"}]}}]}`)
	f.Fuzz(func(t *testing.T, input string) {
		got, err := ParseRegistry(strings.NewReader(input))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, r := range got.Rows {
			e := r.Entry
			require.NoError(t, e.Validate())
			require.False(t, seen[e.Slug])
			seen[e.Slug] = true
		}
	})
}

// FuzzRegistrySyncPage: whatever a registry serves as a page, a sync's plan of it holds only rows
// that validate, each slug taken by one registry name, and never a panic.
func FuzzRegistrySyncPage(f *testing.F) {
	data, err := os.ReadFile("testdata/mcp-registry/servers.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add(`{"servers":[{"server":{"name":"a/b-c","remotes":[{"type":"sse","url":"https://a.example/"}]}},
		{"server":{"name":"a-b/c","remotes":[{"type":"sse","url":"https://b.example/"}]}}],"metadata":{"nextCursor":"x"}}`)
	f.Add(`{"servers":[{"server":{"name":"a/b"},"_meta":{"io.modelcontextprotocol.registry/official":{"status":"deleted","isLatest":true}}}]}`)
	f.Fuzz(func(t *testing.T, input string) {
		p, err := decodeRegistryPage([]byte(input))
		if err != nil {
			return
		}
		entries := make([]fetchedEntry, len(*p.Servers))
		for i, e := range *p.Servers {
			entries[i] = fetchedEntry{registryEntry: e, Page: 1, Index: i}
		}
		var skipped RegistrySkipped
		names, _, err := planSync(entries, &skipped)
		if err != nil {
			return
		}
		owner := map[string]string{}
		for _, n := range names {
			require.False(t, n.deleted && len(n.rows) > 0)
			for _, r := range n.rows {
				e := r.Entry
				require.NoError(t, e.Validate())
				require.Equal(t, n.name, r.Name)
				_, taken := owner[e.Slug]
				require.False(t, taken, "slug %q twice", e.Slug)
				owner[e.Slug] = r.Name
			}
		}
	})
}
