package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A directory entry's URL is bounded at 2,048 bytes: a longer one is refused before anything is
// written, naming the flag or the line, and is not echoed back.
func TestServersRefuseAURLLongerThan2048Bytes(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	long := "https://x.example/?q=" + strings.Repeat("a", 2048)

	res := runCLI(t, "--database-url", url, "servers", "add", "--slug", "x", "--url", long, "--kind", "http")
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "--url: 2069 bytes, longer than the 2048-byte limit")
	require.NotContains(t, res.Stderr, "aaaa")

	res = runCLI(t, "--database-url", url, "servers", "import", writeFile(t, "s.csv", goodCSV+"long,"+long+",http,standard\n"))
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "line 4: url: 2069 bytes, longer than the 2048-byte limit")
	require.Equal(t, 0, countServers(t, url), "nothing is written")
}

// A URL that does not parse is still never echoed with its password, from a flag or a file.
func TestServersNeverEchoThePasswordOfAnUnparseableURL(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	for _, bad := range []string{"https://alice:S3cretPass@exa mple.com/", "https://alice:S3cretPass@[::1/", "https://alice:S3cretPass@a.example/%zz"} {
		res := runCLI(t, "--database-url", url, "servers", "add", "--slug", "x", "--url", bad, "--kind", "mcp")
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "--url")
		require.NotContains(t, res.Stderr, "S3cretPass")

		res = runCLI(t, "--database-url", url, "servers", "import", writeFile(t, "s.jsonl", `{"slug":"x","url":"`+bad+`","kind":"mcp"}`+"\n"))
		require.Equal(t, 2, res.Code, res.Stderr)
		require.Contains(t, res.Stderr, "line 1")
		require.NotContains(t, res.Stderr, "S3cretPass")
	}
	require.Equal(t, 0, countServers(t, url))
}
