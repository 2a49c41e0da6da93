package main

import (
	"context"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
)

// complete asks probectl what a shell would offer after args (the last one is what has been typed
// so far), the way cobra's generated scripts ask: `probectl __complete ARGS...`.
func complete(t *testing.T, c cli, args ...string) []string {
	t.Helper()
	res := c.run(t, append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	return lines(res.Stdout)
}

func TestCompletionOffersEachFlagsValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"-o offers table and json", []string{"servers", "list", "-o", ""}, []string{"table", "json", ":4"}},
		{"-o offers csv too on an audit", []string{"audit", "open", "-o", ""}, []string{"table", "json", "csv", ":4"}},
		{"--kind offers the check kinds", []string{"servers", "add", "--kind", ""}, []string{"mcp", "http", ":4"}},
		{"--plan offers the plans", []string{"servers", "add", "--plan", ""}, []string{"standard", "frequent", ":4"}},
		{"--status offers the statuses", []string{"servers", "list", "--status", ""}, []string{"active", "paused", "delisted", ":4"}},
		{"--finish offers the finish modes on run round", []string{"run", "round", "--finish", ""}, []string{"tx", "advance-first", ":4"}},
		{"--finish offers the finish modes on deploy record", []string{"deploy", "record", "--finish", "adv"}, []string{"tx", "advance-first", ":4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := complete(t, cli{}, tt.args...)
			// The shell filters by what was typed; probectl offers the values and a directive
			// (4: no file names), then cobra's note on stderr.
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCompletionOffersSlugsAndKeyIDsFromTheDatabase(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	ctx := context.Background()
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather-eu", Status: "paused"})
	testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "status-page"})
	key := generatedKey(t, url)

	c := cli{env: map[string]string{"PROBECTL_DATABASE_URL": url}}
	assert.Equal(t, []string{"weather\tactive", "weather-eu\tpaused", ":4"}, complete(t, c, "servers", "recheck", "wea"))
	assert.Equal(t, []string{"status-page\tactive", "weather\tactive", "weather-eu\tpaused", ":4"},
		complete(t, cli{}, "--database-url", url, "servers", "recheck", ""))
	assert.Equal(t, []string{":4"}, complete(t, c, "servers", "show", "weather", ""), "only the first argument is a slug")
	assert.Equal(t, []string{"status-page\tactive", "weather-eu\tpaused", ":4"}, complete(t, c, "servers", "recheck", "weather", ""),
		"recheck takes many slugs: each completes, but for those already named")
	assert.Equal(t, []string{key + "\tin use", ":4"}, complete(t, c, "keys", "retire", "ed25519:"))
}

// Receiver names complete for the commands that take one; a removed receiver is not offered.
func TestCompletionOffersReceiverNames(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	c := cli{env: map[string]string{"PROBECTL_DATABASE_URL": url}}
	for _, r := range [][]string{{"oncall", "slack"}, {"oncall-eu", "alertmanager"}, {"ops", "slack"}, {"old", "slack"}} {
		res := runCLI(t, "--database-url", url, "receivers", "add", r[0], "--url", "http://127.0.0.1:9/"+r[0], "--format", r[1])
		require.Equal(t, 0, res.Code, res.Stderr)
	}
	require.Equal(t, 0, runCLI(t, "--database-url", url, "receivers", "remove", "old").Code)
	assert.Equal(t, []string{"oncall\tslack", "oncall-eu\talertmanager", ":4"}, complete(t, c, "receivers", "test", "on"))
	assert.Equal(t, []string{"oncall\tslack", "oncall-eu\talertmanager", "ops\tslack", ":4"}, complete(t, c, "receivers", "remove", ""))
	assert.Equal(t, []string{":4"}, complete(t, c, "receivers", "test", "oncall", ""), "one receiver per command")
}

func TestCompletionSaysNothingWithoutADatabase(t *testing.T) {
	t.Parallel()
	// Nothing configured: no connection is even tried (libpq's defaults would reach a local server).
	assert.Equal(t, []string{":4"}, complete(t, cli{}, "servers", "recheck", ""))

	// A refused connection, and a server that accepts and never answers: nothing, and no error.
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedURL := "postgres://probectl@" + refused.Addr().String() + "/probectl?sslmode=disable"
	require.NoError(t, refused.Close())
	res := cli{}.run(t, "__complete", "--database-url", refusedURL, "keys", "retire", "")
	assert.Equal(t, 0, res.Code)
	assert.Equal(t, ":4\n", res.Stdout)
	assert.NotContains(t, res.Stderr, "could not reach")

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	// The URL's own connect timeout is ten minutes: only completion's bound ends the wait.
	silentURL := "postgres://probectl@" + silent.Addr().String() + "/probectl?sslmode=disable&connect_timeout=600"
	assert.Equal(t, []string{":4"}, complete(t, cli{}, "--database-url", silentURL, "servers", "recheck", ""))
}

// refusedDatabaseURL is a database URL on a loopback port nothing listens on: a command that gets
// as far as connecting exits 3, so one that exits 2 refused its flags first.
func refusedDatabaseURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "postgres://probectl@" + l.Addr().String() + "/probectl?sslmode=disable&connect_timeout=5"
	require.NoError(t, l.Close())
	return url
}

func TestEveryCompletedFlagValueIsOneTheFlagAccepts(t *testing.T) {
	t.Parallel()
	url := refusedDatabaseURL(t)
	tests := []struct {
		flag string
		args []string // the command, with whatever else it needs before it would connect
	}{
		{"outcome", []string{"runs", "list"}},
		{"status", []string{"servers", "list"}},
		{"kind", []string{"servers", "add", "--slug", "weather", "--url", "https://weather.example/mcp"}},
		{"plan", []string{"servers", "add", "--slug", "weather", "--url", "https://weather.example/mcp", "--kind", "mcp"}},
		{"finish", []string{"run", "round", "--unsigned"}},
		{"finish", []string{"deploy", "record"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " ")+" --"+tt.flag, func(t *testing.T) {
			t.Parallel()
			offered := complete(t, cli{}, append(slices.Clone(tt.args), "--"+tt.flag, "")...)
			require.Greater(t, len(offered), 1, "completion offers values")
			for _, v := range offered[:len(offered)-1] {
				args := append([]string{"--database-url", url}, tt.args...)
				res := cli{}.run(t, append(args, "--"+tt.flag, v)...)
				assert.Equal(t, 3, res.Code, "completion offers --%s %s, which the command must accept and go on to connect: %s", tt.flag, v, res.Stderr)
			}
		})
	}
}

// TestEveryCommandIsOfferedTheOutputFormatsItTakes asks each command which -o values it takes (its
// refusal of a bogus one lists them) and compares them with what completion offers.
func TestEveryCommandIsOfferedTheOutputFormatsItTakes(t *testing.T) {
	t.Parallel()
	url := refusedDatabaseURL(t)
	// What each command needs before it reads -o; a command missing here gets no argument.
	needs := map[string][]string{
		"probectl check":            {"https://weather.example/mcp"},
		"probectl keys export":      {"ed25519:0000000000000000"},
		"probectl keys generate":    {"--out", filepath.Join(t.TempDir(), "k")},
		"probectl keys register":    {"k.key"},
		"probectl keys retire":      {"ed25519:0000000000000000"},
		"probectl receivers add":    {"x", "--url", "https://x.example/", "--format", "slack"},
		"probectl receivers remove": {"x"},
		"probectl receivers test":   {"x"},
		"probectl runs show":        {"1"},
		"probectl runs verify":      {"run.json"},
		"probectl servers add":      {"--slug", "x", "--url", "https://x.example/", "--kind", "http"},
		"probectl servers delist":   {"x"},
		"probectl servers import":   {"servers.csv"},
		"probectl servers pause":    {"x"},
		"probectl servers recheck":  {"x"},
		"probectl servers resume":   {"x"},
		"probectl servers show":     {"x"},
	}
	// Commands that print no report: -o means nothing to them.
	noOutput := map[string]bool{"probectl serve": true, "probectl worker": true}
	supports := regexp.MustCompile(`this command supports (.*)`)
	io, _, _, _ := testStreams()
	root := newRootCmd(newFactory(io, testEnv(t), buildInfo{Version: "dev"}))
	var leaves []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.Hidden && !c.HasAvailableSubCommands() && !noOutput[c.CommandPath()] && c.Name() != "docs" {
			leaves = append(leaves, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	require.Greater(t, len(leaves), 20)
	for _, c := range leaves {
		path := c.CommandPath()
		words := strings.Fields(path)[1:]
		res := cli{env: map[string]string{"USER": "ana"}}.run(t,
			append(append([]string{"--database-url", url}, words...), append(slices.Clone(needs[path]), "-o", "bogus")...)...)
		m := supports.FindStringSubmatch(res.Stderr)
		if !assert.NotNil(t, m, "%s -o bogus: %s", path, res.Stderr) {
			continue
		}
		offered := complete(t, cli{}, append(slices.Clone(words), "-o", "")...)
		assert.Equal(t, strings.Split(m[1], ", "), offered[:len(offered)-1], "%s: -o completes what the command takes", path)
	}
}
